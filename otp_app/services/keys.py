"""OTP API keys: create (shown once), authenticate, revoke."""
import secrets

from django.db import transaction
from django.utils import timezone

from otp_app.models import ApiKey
from otp_app.services.errors import Unauthenticated
from platform_app.services.identity.keys import sha256_hex


@transaction.atomic
def otp_key_create(*, workspace, mode: str, name: str = "") -> tuple[ApiKey, str]:
    """A new key; the plain value is returned once and never stored."""
    if mode not in ApiKey.Mode.values:
        raise ValueError("mode must be live or test")
    raw = f"svc_{mode}_" + secrets.token_urlsafe(30)
    key = ApiKey.objects.create(workspace=workspace, mode=mode, name=name, prefix=raw[:16], key_hash=sha256_hex(raw))
    return key, raw


def otp_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def otp_key_authenticate(raw: str) -> ApiKey:
    if not raw.startswith(("svc_live_", "svc_test_")):
        raise Unauthenticated("The API key is not valid.", code="invalid_api_key")
    # the workspace's geo policy rides along: every send checks it (routing.route_for)
    key = ApiKey.objects.select_related("workspace__otp_policy").filter(key_hash=sha256_hex(raw)).first()
    if key is None:
        raise Unauthenticated("The API key is not valid.", code="invalid_api_key")
    if key.revoked_at is not None:
        raise Unauthenticated("The API key has been revoked.", code="api_key_revoked")
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key
