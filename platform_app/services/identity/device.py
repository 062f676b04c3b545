"""Device authorization (RFC 8628), as `svc login` uses it: the device asks for codes, a signed-in user approves
the user code on `/device` (choosing the scopes, never above the role, and optionally one workspace), and the
device, polling with its device code, receives a new API token once.

Errors a device sees are OAuth's (`authorization_pending`, `slow_down`, `access_denied`, `expired_token`,
`invalid_grant`); what the page shows are the platform's.
"""
import re
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ApplicationError, NotFound, ValidationFailed
from platform_app.models import DeviceAuthorization
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.identity.scopes import ALL_SCOPES, parse_scopes
from platform_app.services.identity.tokens import api_token_create, token_scopes_within_role
from platform_app.services.mcp.oauth import OAuthError

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
USER_CODE_LETTERS = "BCDFGHJKLMNPQRSTVWXZ"  # no vowels (no words), nothing read two ways (0/O, 1/I)
CLIENT_ID = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
S = DeviceAuthorization.Status


def user_code_normal(code: str) -> str:
    return re.sub(r"[\s-]", "", str(code or "")).upper()


def _scopes(value) -> list[str]:
    """OAuth's space-separated `scope` (commas too); none asked: every scope, the user chooses on the page."""
    asked = ",".join(str(value or "").replace(",", " ").split())
    if not asked:
        return list(ALL_SCOPES)
    try:
        return parse_scopes(asked)
    except ValueError as exc:
        raise OAuthError("invalid_scope", str(exc)) from None


def device_authorization_start(*, client_id: str, scope, site_url: str) -> dict:
    """New codes for a device (RFC 8628 §3.2)."""
    if not CLIENT_ID.match(str(client_id or "")):
        raise OAuthError("invalid_client", "client_id: 1-40 letters, digits, dots, dashes or underscores.")
    scopes = _scopes(scope)
    device_code = secrets.token_urlsafe(32)
    user_code = "".join(secrets.choice(USER_CODE_LETTERS) for _ in range(8))
    ttl = settings.DEVICE_CODE_TTL_SECONDS
    DeviceAuthorization.objects.create(device_code_hash=sha256_hex(device_code), user_code_hash=sha256_hex(user_code),
                                       client_id=client_id, scopes=scopes,
                                       expires_at=timezone.now() + timedelta(seconds=ttl))
    shown = f"{user_code[:4]}-{user_code[4:]}"
    return {"device_code": device_code, "user_code": shown, "verification_uri": f"{site_url}/device",
            "verification_uri_complete": f"{site_url}/device?code={shown}", "expires_in": ttl,
            "interval": settings.DEVICE_POLL_INTERVAL_SECONDS}


def device_authorization_pending(*, user_code: str) -> DeviceAuthorization:
    """The request a user code names, while it waits for a decision (404 otherwise)."""
    found = DeviceAuthorization.objects.filter(user_code_hash=sha256_hex(user_code_normal(user_code)),
                                               status=S.PENDING, expires_at__gt=timezone.now()).first()
    if found is None:
        raise NotFound("No device is waiting with this code: it may have expired or been used. Run the login again.")
    return found


@transaction.atomic
def device_authorization_decide(*, user, user_code: str, approve: bool, scopes: list[str] | None = None,
                                workspace=None) -> DeviceAuthorization:
    """Approve (with the scopes chosen among those asked, never above the user's role) or deny. `workspace`:
    a workspace the caller already entered through the access service, to bind the token to."""
    request = device_authorization_pending(user_code=user_code)
    request = DeviceAuthorization.objects.select_for_update().get(pk=request.pk)
    if request.status != S.PENDING:
        raise NotFound("No device is waiting with this code.")
    request.user = user
    if approve:
        granted = [s for s in request.scopes if s in (scopes or [])]
        if not granted:
            raise ValidationFailed("Choose at least one scope.", details={"scopes": ["Choose at least one."]})
        token_scopes_within_role(user=user, scopes=granted, workspace=workspace)
        request.status, request.granted_scopes, request.workspace = S.APPROVED, granted, workspace
    else:
        request.status = S.DENIED
    request.save(update_fields=["status", "user", "granted_scopes", "workspace"])
    return request


def device_token_poll(*, grant_type: str, device_code: str, client_id: str, ip: str = "") -> dict:
    """The device's poll (RFC 8628 §3.4): the token once approved, else OAuth's error saying why not."""
    if grant_type != GRANT_TYPE:
        raise OAuthError("unsupported_grant_type", f"grant_type: {GRANT_TYPE}.")
    now = timezone.now()
    with transaction.atomic():  # the refusals are raised after it, so the poll's time is kept
        request = (DeviceAuthorization.objects.select_for_update()
                   .filter(device_code_hash=sha256_hex(str(device_code or "")), client_id=str(client_id or ""))
                   .first())
        refusal = _refusal(request, now)
        if request is not None and (refusal is None or refusal.error in ("slow_down", "authorization_pending")):
            DeviceAuthorization.objects.filter(pk=request.pk).update(polled_at=now)
        if refusal is None:
            expires = timedelta(days=settings.DEVICE_TOKEN_DAYS)
            try:  # the role is read again: one lowered since the approval refuses the token
                token, raw = api_token_create(user=request.user, name=f"{request.client_id} (device login)",
                                              scopes=request.granted_scopes, expires=expires,
                                              workspace=request.workspace, ip=ip)
            except ApplicationError as exc:
                refusal = OAuthError("access_denied", exc.message)
            else:
                DeviceAuthorization.objects.filter(pk=request.pk).update(status=S.USED, token=token)
    if refusal is not None:
        raise refusal
    return {"access_token": raw, "token_type": "Bearer", "scope": " ".join(request.granted_scopes),
            "token_id": token.pk, "expires_in": int(expires.total_seconds())}


def _refusal(request, now) -> OAuthError | None:
    if request is None or request.status == S.USED:
        return OAuthError("invalid_grant", "Unknown or used device code.")
    if request.expires_at <= now:
        return OAuthError("expired_token", "The code expired before it was approved; start again.")
    if request.status == S.DENIED:
        return OAuthError("access_denied", "The request was denied.")
    interval = settings.DEVICE_POLL_INTERVAL_SECONDS
    if request.polled_at and now - request.polled_at < timedelta(seconds=interval):
        return OAuthError("slow_down", f"Poll at most every {interval} s.")
    if request.status == S.PENDING:
        return OAuthError("authorization_pending", "Waiting for the user to approve.")
    return None


def device_authorizations_purge() -> int:
    """Requests past their expiry, in bounded batches (beat)."""
    stale = list(DeviceAuthorization.objects.filter(expires_at__lt=timezone.now() - timedelta(days=1))
                 .values_list("pk", flat=True)[:1000])
    return DeviceAuthorization.objects.filter(pk__in=stale).delete()[0]
