"""What a scope allows and what a role may do (contract.md, document 1 section 5)."""
from platform_app.choices import Role, Scope

ALL_SCOPES = tuple(s.value for s in Scope)

# The scopes a role holds. A token never exceeds its owner's role.
ROLE_SCOPES = {
    Role.OWNER: {Scope.ADMIN},
    Role.ADMIN: {Scope.ADMIN},
    Role.DEVELOPER: {Scope.DEPLOY, Scope.ENV_WRITE, Scope.DOMAINS},
    Role.VIEWER: {Scope.READ},
    Role.BILLING: {Scope.READ, Scope.BILLING},  # billing: plan, payment methods, invoices, usage cap
}


def scope_allows(held, required: str | None) -> bool:
    """`admin` ⊇ everything (`billing` included); `env:write` ⊇ `env:read`; every scope but `env:read` ⊇ `read`."""
    held = set(held)
    if required is None or Scope.ADMIN in held or required in held:
        return True
    if required == Scope.ENV_READ:
        return Scope.ENV_WRITE in held
    if required == Scope.READ:
        return bool(held - {Scope.ENV_READ})
    return False


def role_allows(role: str, scope: str) -> bool:
    """Whether a workspace role holds `scope` (what a page may offer a member, what an action needs)."""
    return scope_allows(ROLE_SCOPES.get(role, set()), scope)


def parse_scopes(value) -> list[str]:
    """`"read,deploy"` or `["read", "deploy"]` → a sorted, validated list."""
    if isinstance(value, str):
        items = [s.strip() for s in value.split(",")]
    elif isinstance(value, list) and all(isinstance(s, str) for s in value):
        items = [s.strip() for s in value]
    else:
        raise ValueError("scopes must be a comma-separated string or a list of strings")
    items = [s for s in items if s]
    if not items:
        raise ValueError("at least one scope is required")
    unknown = sorted(set(items) - set(ALL_SCOPES))
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)}; allowed: {', '.join(ALL_SCOPES)}")
    return sorted(set(items), key=ALL_SCOPES.index)
