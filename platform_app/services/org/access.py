"""Who may act in a workspace, and from where. `workspace_enter` is the one check every way into a workspace
calls — its API routes (platform_app/api/base.py), dashboard pages (platform_app/pages/base.py), MCP tools,
`POST /v1/graduate/redeem`, token creation and Git connections with `orgId`, log streams — in this order:

1. membership (404 for anyone else, so ids cannot be probed) and a bound token's workspace (404 for another);
2. the workspace's IP allowlist and "require SSO" rule (403 `ip_not_allowed` / `sso_required`, below);
3. the credential's scopes (403 `insufficient_scope`) and the member's current role (403 `forbidden`): what a
   credential may do is what both allow, so a token never exceeds its holder's role, even after a demotion.

SCIM is the directory's own channel (its token, not a member) and stays outside this check (docs/org.md).
The query that finds the membership also reads both workspace rules (whether the allowlist has entries); a
workspace with an allowlist costs one more to read it, a session that must prove SSO one more.

- **IP allowlist**: when the workspace has entries, the client address (config/client_ip.py, the trusted-proxy
  rule) must be inside one of them, else 403 `ip_not_allowed`.
- **Require SSO**: a member whose role is not exempt (SSO_REQUIRE_EXEMPT_ROLES, owners by default: the break-glass
  path) acts only with a session started through the workspace's single sign-on (an API session with an
  `SsoSession` row, a dashboard session carrying the workspace in `SSO_COOKIE_KEY`), or with an API token of a
  user whose identity at that provider is linked (they signed in through it at least once). Else 403
  `sso_required`, naming where to sign in.
"""
import functools
import ipaddress
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from config.errors import ApplicationError, Forbidden, NotFound
from config.rows import columns, select_one, table
from platform_app.choices import Scope
from platform_app.models import (AnswerStamp, IpAllowlistEntry, Membership, SsoIdentity, SsoSession, Workspace,
                                 WorkspaceSso)
from platform_app.services.identity.scopes import ROLE_SCOPES, scope_allows

SSO_COOKIE_KEY = "sso_workspaces"  # dashboard session: the ids of the workspaces signed in through SSO


class IpNotAllowed(Forbidden):
    code = "ip_not_allowed"


class SsoRequired(Forbidden):
    code = "sso_required"


class InsufficientScope(ApplicationError):
    status, code = 403, "insufficient_scope"

    def __init__(self, required: str, held):
        super().__init__(f"This action requires the `{required}` scope.",
                         details={"requiredScope": required, "tokenScopes": sorted(held)})


class RoleTooLow(Forbidden):
    def __init__(self, role: str, required: str):
        super().__init__(f"Your role ({role}) does not allow this action.",
                         details={"role": role, "requiredScope": required})


@dataclass(frozen=True)
class Credential:
    """What a request acts with: its scopes (a session: `admin`, its role's full rights), a token's workspace
    binding, and what "require SSO" looks at (the token, the API session, the dashboard session)."""
    ip: str
    scopes: frozenset = field(default_factory=lambda: frozenset({Scope.ADMIN.value}))
    bound_workspace_id: str | None = None
    token: object = None
    auth_session: object = None
    cookie_session: object = None


@dataclass(frozen=True)
class Access:
    """A caller let into a workspace: `allows(scope)` is what its credential and its role both allow."""
    workspace: object
    membership: object
    credential: Credential

    def allows(self, scope: str) -> bool:
        return scope_allows(self.credential.scopes, scope) and scope_allows(ROLE_SCOPES[self.membership.role], scope)


def workspace_enter(*, user, ref: str, credential: Credential, scope: str | None) -> Access:
    """The one access check (module docstring): the workspace named `ref` for this caller, or the refusal."""
    workspace, membership = workspace_for_member(user=user, ref=ref)
    if credential.bound_workspace_id and credential.bound_workspace_id != workspace.pk:
        raise NotFound("No such workspace.")
    workspace_access_check(workspace=workspace, membership=membership, ip=credential.ip, token=credential.token,
                           auth_session=credential.auth_session, cookie_session=credential.cookie_session)
    if scope is not None:
        if not scope_allows(credential.scopes, scope):
            raise InsufficientScope(scope, credential.scopes)
        if not scope_allows(ROLE_SCOPES[membership.role], scope):
            raise RoleTooLow(membership.role, scope)
    return Access(workspace, membership, credential)


def network_parse(value: str):
    """An `ip_network` from a CIDR or a bare address (host bits are cleared: `10.1.2.3/8` is `10.0.0.0/8`);
    ValueError for anything else."""
    value = (value or "").strip()
    if not value or len(value) > 49 or any(c.isspace() for c in value) or "%" in value:
        raise ValueError("not a network")
    network = ipaddress.ip_network(value, strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped is not None:
        mapped = network.network_address.ipv4_mapped  # ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n-96)
        network = ipaddress.ip_network(f"{mapped}/{max(0, network.prefixlen - 96)}", strict=False)
    return network


def address_allowed(ip: str, cidrs) -> bool:
    """Whether `ip` (as client_ip normalised it) is inside any of `cidrs`."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False  # "unknown": no address, nothing to allow
    for cidr in cidrs:
        try:
            if address in network_parse(cidr):
                return True
        except ValueError:
            continue
    return False


def sso_satisfied(*, workspace, user, token=None, auth_session=None, cookie_session=None) -> bool:
    """Whether this request's credential comes from the workspace's single sign-on (module docstring)."""
    if token is not None:
        return SsoIdentity.objects.filter(workspace=workspace, user=user).exists()
    if auth_session is not None:
        return SsoSession.objects.filter(session=auth_session, workspace=workspace).exists()
    if cookie_session is not None:
        return workspace.pk in (cookie_session.get(SSO_COOKIE_KEY) or [])
    return False


@functools.cache
def _member_sql(vendor: str) -> str:
    q = connection.ops.quote_name
    workspace_id, user_id, pk = q("workspace_id"), q("user_id"), q("id")
    return (f"SELECT {columns(Membership, 'm')}, {columns(Workspace, 'w')}, s.{q('enabled')}, s.{q('require_sso')}, "
            f"EXISTS (SELECT 1 FROM {table(IpAllowlistEntry)} a WHERE a.{workspace_id} = w.{pk}), "
            f"(SELECT st.{q('version')} FROM {table(AnswerStamp)} st WHERE st.{workspace_id} = w.{pk}) "
            f"FROM {table(Membership)} m JOIN {table(Workspace)} w ON w.{pk} = m.{workspace_id} "
            f"LEFT JOIN {table(WorkspaceSso)} s ON s.{workspace_id} = w.{pk} "
            f"WHERE m.{user_id} = %s AND (m.{workspace_id} = %s OR w.{q('slug')} = %s) ORDER BY m.{pk} LIMIT 1")


def workspace_for_member(*, user, ref: str):
    """The workspace `ref` names (id or slug) and the caller's membership, carrying the workspace's rules
    (`sso_enabled`, `sso_required`, `allowlisted`: whether its allowlist has entries) for
    workspace_access_check, and the workspace its answer stamp (`answers_version`); 404 otherwise. One statement
    written by hand (config/rows.py): every request into a workspace runs it."""
    row = select_one(_member_sql(connection.vendor), [user.pk, ref, ref], Membership, Workspace)
    if row is None:
        raise NotFound("No such workspace.")
    membership, workspace, enabled, require, allowlisted, stamp = row
    membership.workspace = workspace
    workspace.answers_version = stamp or 0  # what the workspace's kept answers are kept under (api/kept.py)
    membership.sso_enabled, membership.sso_required, membership.allowlisted = bool(enabled), bool(require), bool(
        allowlisted)
    return workspace, membership


def workspace_access_check(*, workspace, membership, ip: str, token=None, auth_session=None,
                           cookie_session=None) -> None:
    """403 `ip_not_allowed` or `sso_required` when the workspace's rules (read with `membership`,
    `workspace_for_member`) refuse this request; nothing otherwise."""
    if membership.allowlisted:
        cidrs = list(IpAllowlistEntry.objects.filter(workspace=workspace).values_list("cidr", flat=True))
        if not address_allowed(ip, cidrs):
            raise IpNotAllowed(f"Your address ({ip}) is not on this workspace's IP allowlist.", details={"ip": ip})
    if not (membership.sso_enabled and membership.sso_required) or membership.role in settings.SSO_REQUIRE_EXEMPT_ROLES:
        return
    if sso_satisfied(workspace=workspace, user=membership.user_id, token=token, auth_session=auth_session,
                     cookie_session=cookie_session):
        return
    raise SsoRequired("This workspace requires single sign-on: sign in through its identity provider.",
                      details={"signInUrl": f"/v1/auth/sso/{workspace.slug}/start",
                               "dashboardSignInUrl": f"/sso/{workspace.slug}/start"})
