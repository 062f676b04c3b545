"""What every send reads and operators rarely change, kept in each web process: API keys (with their workspace
and its geo policy) and each workspace's routing rules.

`config` is a `config.local_cache.LocalCache`: a send costs dict lookups instead of a three-table join and a
routing query. Any save or delete of an ApiKey, WorkspacePolicy or RoutingRule (services, console, admin,
cascades of a workspace's deletion) invalidates it through the model signals connected here: at once in this
process, within `OTP_LOCAL_CHECK_SECONDS` in the others, and entries live `OTP_LOCAL_TTL_SECONDS` at most
whatever happens. Queryset `.update()` sends no signal: code that changes these rows that way must call
`otp_config_invalidate()` itself.

Cached objects are shared by every request and thread of the process: read them, never change them.
"""
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from config.local_cache import LocalCache

config = LocalCache("otp-config", ttl=settings.OTP_LOCAL_TTL_SECONDS, check_setting="OTP_LOCAL_CHECK_SECONDS")


def otp_config_invalidate(*_args, **_kwargs) -> None:
    """Forget cached keys and routes everywhere (now here, soon elsewhere), and again once the current
    transaction commits, so a request that read the old row meanwhile cannot keep it."""
    config.invalidate()
    transaction.on_commit(config.invalidate)


def _on_key_save(sender, instance=None, created=False, **kwargs):
    if not created:  # only keys found in the database are cached: a new one cannot be stale anywhere
        otp_config_invalidate()


post_save.connect(_on_key_save, sender="otp_app.ApiKey", dispatch_uid="otp-config-save-otp_app.ApiKey")
post_delete.connect(otp_config_invalidate, sender="otp_app.ApiKey", dispatch_uid="otp-config-delete-otp_app.ApiKey")
for _label in ("otp_app.WorkspacePolicy", "otp_app.RoutingRule"):
    post_save.connect(otp_config_invalidate, sender=_label, dispatch_uid=f"otp-config-save-{_label}")
    post_delete.connect(otp_config_invalidate, sender=_label, dispatch_uid=f"otp-config-delete-{_label}")
