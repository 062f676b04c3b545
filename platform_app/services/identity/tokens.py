"""Personal API tokens: create (shown once), list, revoke, authenticate."""
import functools
import re
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from config.errors import Forbidden, NotFound, Unauthenticated, ValidationFailed
from config.rows import columns, select_one, table
from platform_app.models import ApiToken, Membership, User
from platform_app.services.teams.audit import audit_record
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.identity.scopes import ROLE_SCOPES, scope_allows

TOKEN_PREFIX = "svc_"
_DURATION = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_expires(value) -> timedelta | None:
    """`90d`, `12h`, `30m`, `2w` or null; bounded by API_TOKEN_MAX_DAYS."""
    if value in (None, ""):
        return None
    match = _DURATION.match(str(value)) if isinstance(value, str) else None
    if not match:
        raise ValueError("expires must look like 30m, 12h, 90d or 2w")
    delta = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    if delta <= timedelta(0) or delta > timedelta(days=settings.API_TOKEN_MAX_DAYS):
        raise ValueError(f"expires must be between 1m and {settings.API_TOKEN_MAX_DAYS}d")
    return delta


def _audit_workspaces(token: ApiToken):
    if token.workspace_id:
        return [token.workspace]
    return [m.workspace for m in Membership.objects.filter(user=token.user).select_related("workspace")]


class ScopeExceedsRole(Forbidden):
    code = "scope_exceeds_role"


def token_scopes_within_role(*, user, scopes: list[str], workspace=None) -> None:
    """A token holds no scope its holder's role does not: the role in `workspace` for a bound token, the highest
    of their roles for an unbound one (each use is still limited to the role where it acts). 403
    `scope_exceeds_role` naming the first scope above it."""
    members = Membership.objects.filter(user=user)
    roles = list((members.filter(workspace=workspace) if workspace is not None else members)
                 .values_list("role", flat=True))
    for scope in scopes:
        if not any(scope_allows(ROLE_SCOPES[role], scope) for role in roles):
            raise ScopeExceedsRole(f"Your role ({', '.join(sorted(set(roles))) or 'none'}) does not hold the "
                                   f"`{scope}` scope.", details={"scopes": [f"`{scope}` is above your role."],
                                                                 "scope": scope, "roles": sorted(set(roles))})


@transaction.atomic
def api_token_create(*, user, name: str, scopes: list[str], expires: timedelta | None, workspace=None,
                     ip: str = "") -> tuple[ApiToken, str]:
    """Returns the row and the plain token, which is never stored and never shown again."""
    if workspace is not None and not Membership.objects.filter(user=user, workspace=workspace).exists():
        raise NotFound("No such workspace.")
    token_scopes_within_role(user=user, scopes=scopes, workspace=workspace)
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, workspace=workspace, name=name, prefix=raw[:12], token_hash=sha256_hex(raw), scopes=scopes,
        expires_at=timezone.now() + expires if expires else None,
    )
    for ws in _audit_workspaces(token):
        audit_record(workspace=ws, actor=user, action="api_token.created", target=token,
                     data={"name": name, "scopes": scopes, "boundTo": token.workspace_id}, ip=ip)
    return token, raw


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor, reason: str = "revoked", ip: str = "") -> ApiToken:
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.revoked_reason = reason
        token.save(update_fields=["revoked_at", "revoked_reason"])
        for ws in _audit_workspaces(token):
            audit_record(workspace=ws, actor=actor, action="api_token.revoked", target=token,
                         data={"name": token.name, "reason": reason}, ip=ip)
    return token


def api_tokens_revoke_for_member(*, user, workspace, actor, ip: str = "") -> int:
    """A removed member loses every token bound to that workspace (document 1, 5.5)."""
    tokens = ApiToken.objects.filter(user=user, workspace=workspace, revoked_at__isnull=True)
    count = 0
    for token in tokens:
        api_token_revoke(token=token, actor=actor, reason="member_removed", ip=ip)
        count += 1
    return count


def _api_token_live(token: ApiToken | None, now) -> ApiToken:
    if token is None:
        raise Unauthenticated("The API token is not valid.", code="unauthenticated")
    if token.revoked_at is not None:
        raise Unauthenticated("The API token has been revoked.", code="token_revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise Unauthenticated("The API token has expired.", code="token_expired")
    if not token.user.is_active:
        raise Unauthenticated("The account is disabled.", code="token_revoked")
    return token


def api_token_active(*, token_id: str) -> ApiToken:
    """The token by id while it is live, or 401: what depends on a token (a stream token, an open stream) asks
    again with this."""
    token = ApiToken.objects.select_related("user", "workspace").filter(pk=token_id).first()
    return _api_token_live(token, timezone.now())


@functools.cache
def _token_sql(vendor: str) -> str:
    q = connection.ops.quote_name
    return (f"SELECT {columns(ApiToken, 't')}, {columns(User, 'u')} FROM {table(ApiToken)} t "
            f"JOIN {table(User)} u ON u.{q('id')} = t.{q('user_id')} WHERE t.{q('token_hash')} = %s")


def _token_with_user(token_hash: str) -> ApiToken | None:
    """The token whose hash this is, with its user; written by hand (config/rows.py): every request with a token
    runs it. Its workspace is read when asked for (the access check needs only the id)."""
    row = select_one(_token_sql(connection.vendor), [token_hash], ApiToken, User)
    if row is None:
        return None
    token, user = row
    token.user = user
    return token


def api_token_authenticate(raw: str) -> ApiToken:
    """The live token for a bearer value, or 401 (unknown, revoked, expired)."""
    now = timezone.now()
    token = _api_token_live(_token_with_user(sha256_hex(raw)), now)
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # throttled: one write a minute
    return token


def api_token_get(*, user, token_id: str, workspace=None) -> ApiToken:
    qs = ApiToken.objects.filter(pk=token_id)
    qs = qs.filter(workspace=workspace) if workspace is not None else qs.filter(user=user)
    token = qs.first()
    if token is None:
        raise NotFound("No such API token.")
    return token


def validate_token_input(*, scopes, expires):
    from platform_app.services.identity.scopes import parse_scopes

    errors, parsed = {}, {}
    try:
        parsed["scopes"] = parse_scopes(scopes)
    except ValueError as exc:
        errors["scopes"] = [str(exc)]
    try:
        parsed["expires"] = parse_expires(expires)
    except ValueError as exc:
        errors["expires"] = [str(exc)]
    if errors:
        raise ValidationFailed("; ".join(f"{k}: {v[0]}" for k, v in errors.items()), details=errors)
    return parsed["scopes"], parsed["expires"]
