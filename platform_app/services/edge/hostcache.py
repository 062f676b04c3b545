"""In-process caches for the edge's hot path: which site a host name serves (and, in isr.py, the pages it serves).

Both are `config.local_cache.LocalCache`s: a bounded dict per web process whose entries every process drops when
the cache's shared version changes, read at most every `EDGE_LOCAL_CHECK_SECONDS`. So a request costs a dict
lookup, not a database join or a Redis round trip, and a promote, rollback or domain change reaches every worker
within a second.

`edge_hosts_invalidate()` is what the deployment and domain services call after a change of what a host serves
(promote, rollback, a domain added, verified or removed). Saves of projects, deployments and the edge's own
rows call it too (model signals, connected here by model label so this module imports no model), which covers
builds finishing, admin edits and test fixtures.
"""
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.core.signals import setting_changed

from config.local_cache import MISSING, LocalCache  # noqa: F401 - MISSING is what `hosts.get` answers for a miss

hosts = LocalCache("hosts", ttl=settings.EDGE_HOSTS_TTL_SECONDS, check_setting="EDGE_LOCAL_CHECK_SECONDS")


def edge_hosts_invalidate(*_args, **_kwargs) -> None:
    """Forget which site each host serves, everywhere (now here, within a second elsewhere), and again once the
    current transaction commits, so a request served meanwhile cannot keep the old answer."""
    hosts.invalidate()
    transaction.on_commit(hosts.invalidate)


SITE_FIELDS = {"slug", "production_deployment", "status", "artifact_path", "snapshot", "env", "project"}


def _on_save(sender, instance=None, update_fields=None, **kwargs):
    if update_fields is None or SITE_FIELDS & set(update_fields):
        edge_hosts_invalidate()


for _label in ("platform_app.Project", "platform_app.Deployment"):
    post_save.connect(_on_save, sender=_label, dispatch_uid=f"edge-hosts-save-{_label}")
    post_delete.connect(edge_hosts_invalidate, sender=_label, dispatch_uid=f"edge-hosts-delete-{_label}")
for _label in ("platform_app.FirewallRule", "platform_app.AnalyticsSettings", "platform_app.Domain",
               "platform_app.Component"):
    post_save.connect(edge_hosts_invalidate, sender=_label, dispatch_uid=f"edge-hosts-save-{_label}")
    post_delete.connect(edge_hosts_invalidate, sender=_label, dispatch_uid=f"edge-hosts-delete-{_label}")


def _on_setting(setting=None, **kwargs):
    if setting in ("DEPLOY_DOMAIN", "ARTIFACT_ROOT", "SITE_URL"):
        hosts.clear()


setting_changed.connect(_on_setting, dispatch_uid="edge-hosts-settings")
