"""OAuth `state`: signed (django.core.signing), single use (a row consumed under a lock) and bound to the browser
that started the flow: start sets a random value in a short-lived cookie scoped to the callback's path, the state
carries its hash, and the callback refuses a state whose cookie is missing or different. Without the binding, a
flow started by one person and completed by another (a link sent to a victim) would sign the victim in to the
starter's account, or link the victim's identity to it (login CSRF)."""
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from config.errors import Forbidden, ValidationFailed
from platform_app.models import OAuthState
from platform_app.services.identity.keys import sha256_hex

SALT = "oauth-state"
BINDING_COOKIE = "oauth_binding"


class StateNotBound(Forbidden):
    code = "oauth_state_not_bound"


def return_to_check(return_to: str) -> str:
    """Only our own origin or an allowed one: no open redirect. A backslash or a control character is refused
    anywhere: browsers read `/\\host` as `//host` and drop tabs and newlines, so what is checked here would not be
    where they go."""
    if not return_to:
        return ""
    if "\\" in return_to or any(ord(c) < 0x20 or ord(c) == 0x7f for c in return_to):
        raise ValidationFailed("returnTo must not hold a backslash or a control character.", code="invalid_return_to",
                               details={"returnTo": ["Backslash or control character."]})
    parts = urlsplit(return_to)
    if not parts.scheme and not parts.netloc and return_to.startswith("/") and not return_to.startswith("//"):
        return return_to
    origin = f"{parts.scheme}://{parts.netloc}"
    allowed = {"{0.scheme}://{0.netloc}".format(urlsplit(settings.SITE_URL)), *settings.ALLOWED_RETURN_ORIGINS}
    if parts.scheme not in ("http", "https") or origin not in allowed:
        raise ValidationFailed("returnTo must be on this site or an allowed origin.", code="invalid_return_to",
                               details={"returnTo": ["Origin not allowed."]})
    return return_to


def state_start(*, purpose: str, provider: str, user=None, workspace=None, return_to: str = "",
                pkce: bool = False) -> tuple[OAuthState, str]:
    row = OAuthState(purpose=purpose, provider=provider, user=user if getattr(user, "pk", None) else None,
                     workspace=workspace, return_to=return_to_check(return_to),
                     code_verifier=secrets.token_urlsafe(48) if pkce else "",
                     nonce=secrets.token_urlsafe(16) if pkce else "",
                     expires_at=timezone.now() + timedelta(seconds=settings.OAUTH_STATE_TTL_SECONDS))
    row.save()
    row.binding = secrets.token_urlsafe(24)  # not stored: the start view sets it as a cookie (state_cookie_set)
    value = signing.dumps({"id": row.pk, "b": sha256_hex(row.binding)}, salt=SALT)
    OAuthState.objects.filter(pk=row.pk).update(state_hash=sha256_hex(value))
    return row, value


def state_cookie_set(response, row: OAuthState, *, callback_url: str):
    """The browser binding of `row` (from state_start) as a cookie only the callback receives: HttpOnly, SameSite=Lax
    (the provider's redirect back is a top-level GET), for as long as the state lives."""
    response.set_cookie(BINDING_COOKIE, row.binding, max_age=settings.OAUTH_STATE_TTL_SECONDS,
                        path=urlsplit(callback_url).path, secure=settings.SITE_URL.startswith("https://"),
                        httponly=True, samesite="Lax")
    return response


def state_binding(request) -> str:
    """The binding cookie the callback's request carries ("" when none)."""
    return request.COOKIES.get(BINDING_COOKIE, "")


@transaction.atomic
def state_consume(*, value: str, purpose: str, provider: str, binding: str) -> OAuthState:
    """The state row, marked used; 400 `invalid_state` for a tampered, unknown, used or expired state, 403
    `oauth_state_not_bound` when `binding` (the callback's cookie, state_binding) is not the one start set."""
    try:
        data = signing.loads(value or "", salt=SALT, max_age=settings.OAUTH_STATE_TTL_SECONDS)
    except signing.BadSignature:
        raise ValidationFailed("The OAuth state is not valid.", code="invalid_state")
    if not binding or not secrets.compare_digest(str(data.get("b", "")), sha256_hex(binding)):
        raise StateNotBound("This sign-in was started in another browser (or its cookie expired): start it again "
                            "here.")
    row = OAuthState.objects.select_for_update().filter(pk=data.get("id"), state_hash=sha256_hex(value)).first()
    if row is None or row.purpose != purpose or row.provider != provider:
        raise ValidationFailed("The OAuth state is not valid.", code="invalid_state")
    if row.used_at is not None or row.expires_at <= timezone.now():
        raise ValidationFailed("The OAuth state was already used or has expired.", code="invalid_state")
    row.used_at = timezone.now()
    row.save(update_fields=["used_at"])
    return row
