"""OTP API keys: create (shown once), authenticate, revoke."""
import secrets
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from otp_app.models import ApiKey
from otp_app.services.config_cache import config
from otp_app.services.errors import Unauthenticated
from platform_app.services.identity.keys import sha256_hex

TOUCH_EVERY = timedelta(seconds=60)
_touched: dict[str, datetime] = {}  # key id -> when this process last wrote its last_used_at


@transaction.atomic
def otp_key_create(*, workspace, mode: str, name: str = "") -> tuple[ApiKey, str]:
    """A new key; the plain value is returned once and never stored."""
    if mode not in ApiKey.Mode.values:
        raise ValueError("mode must be live or test")
    raw = f"svc_{mode}_" + secrets.token_urlsafe(30)
    key = ApiKey.objects.create(workspace=workspace, mode=mode, name=name, prefix=raw[:16], key_hash=sha256_hex(raw))
    return key, raw


def otp_key_revoke(*, key: ApiKey) -> ApiKey:
    """Refused at once in this process, within OTP_LOCAL_CHECK_SECONDS in the others (the save's signal
    invalidates the key cache, config_cache)."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def _key_load(key_hash: str) -> ApiKey | None:
    # the workspace's geo policy rides along: every send checks it (routing.route_for)
    return ApiKey.objects.select_related("workspace__otp_policy").filter(key_hash=key_hash).first()


def otp_key_authenticate(raw: str) -> ApiKey:
    """The key of a bearer value, from the process cache when seen lately. The object is shared by every request
    of the process: callers read it, never change it."""
    if not raw.startswith(("svc_live_", "svc_test_")):
        raise Unauthenticated("The API key is not valid.", code="invalid_api_key")
    key_hash = sha256_hex(raw)
    # unknown values are not kept: a flood of them must not push real keys out
    key = config.get_or_compute(("key", key_hash), lambda: _key_load(key_hash), keep=lambda found: found is not None)
    if key is None:
        raise Unauthenticated("The API key is not valid.", code="invalid_api_key")
    if key.revoked_at is not None:
        raise Unauthenticated("The API key has been revoked.", code="api_key_revoked")
    _touch(key)
    return key


def _touch(key: ApiKey) -> None:
    """last_used_at, written at most once a minute per key: each process remembers its own last write, and the
    UPDATE's condition skips a key another process touched within the minute."""
    now = timezone.now()
    last = max(filter(None, (_touched.get(key.pk), key.last_used_at)), default=None)
    if last is not None and now - last <= TOUCH_EVERY:
        return
    _touched[key.pk] = now
    ApiKey.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - TOUCH_EVERY), pk=key.pk
                          ).update(last_used_at=now)
