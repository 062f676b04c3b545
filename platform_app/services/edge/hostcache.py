"""In-process caches for the edge's hot path: which site a host name serves, and the pages it serves.

A `LocalCache` is a bounded dict in the web process. Its entries live a few seconds at most (`ttl`), and every
process drops all of them when the cache's shared version key (in the Django cache, Redis when configured)
changes: `invalidate()` clears this process at once and writes a new version, which the other processes read
at most every `EDGE_LOCAL_CHECK_SECONDS`. So a request costs a dict lookup, not a database join or a Redis
round trip, and a promote, rollback or domain change reaches every worker within a second.

`edge_hosts_invalidate()` is what the deployment and domain services call after a change of what a host serves
(promote, rollback, a domain added, verified or removed). Saves of projects, deployments and the edge's own
rows call it too (model signals, connected here by model label so this module imports no model), which covers
builds finishing, admin edits and test fixtures.
"""
import secrets
import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.core.signals import setting_changed

MISSING = object()


class LocalCache:
    def __init__(self, name: str, *, ttl: float, max_entries: int = 10_000, max_bytes: int | None = None):
        self.name, self.ttl, self.max_entries, self.max_bytes = name, ttl, max_entries, max_bytes
        self._entries: OrderedDict = OrderedDict()
        self._bytes = 0
        self._version = None
        self._next_check = 0.0
        self._generation = 0  # bumped by every clear: a value computed before a clear is not stored after it
        self._lock = threading.Lock()

    @property
    def version_key(self) -> str:
        return f"edge-local:{self.name}:version"

    @property
    def generation(self) -> int:
        return self._generation

    def _sync(self, now: float) -> None:
        self._next_check = now + settings.EDGE_LOCAL_CHECK_SECONDS
        try:
            version = cache.get(self.version_key)
        except Exception:  # noqa: BLE001 - cache unreachable: keep entries only for their short ttl
            version = MISSING
        if version != self._version:
            self._version = version
            self.clear()

    def get(self, key):
        now = time.monotonic()
        if now >= self._next_check:
            self._sync(now)
        entry = self._entries.get(key)
        if entry is None:
            return MISSING
        expires, value, _size = entry
        if expires <= now:
            return MISSING
        return value

    def set(self, key, value, *, size: int = 0, generation: int | None = None) -> None:
        if generation is not None and generation != self._generation:
            return  # invalidated while the value was computed
        if self.max_bytes is not None and size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            self._entries[key] = (time.monotonic() + self.ttl, value, size)
            self._bytes += size
            while self._entries and (len(self._entries) > self.max_entries
                                     or (self.max_bytes is not None and self._bytes > self.max_bytes)):
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()
            self._bytes = 0

    def invalidate(self) -> None:
        """Drop every entry here now, and in every other process at its next version check."""
        self.clear()
        version = secrets.token_hex(8)
        try:
            cache.set(self.version_key, version, None)
            self._version = version
        except Exception:  # noqa: BLE001 - cache unreachable: other processes see the change within their ttl
            pass


hosts = LocalCache("hosts", ttl=settings.EDGE_HOSTS_TTL_SECONDS)


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
for _label in ("platform_app.FirewallRule", "platform_app.AnalyticsSettings", "platform_app.Domain"):
    post_save.connect(edge_hosts_invalidate, sender=_label, dispatch_uid=f"edge-hosts-save-{_label}")
    post_delete.connect(edge_hosts_invalidate, sender=_label, dispatch_uid=f"edge-hosts-delete-{_label}")


def _on_setting(setting=None, **kwargs):
    if setting in ("DEPLOY_DOMAIN", "ARTIFACT_ROOT", "SITE_URL"):
        hosts.clear()


setting_changed.connect(_on_setting, dispatch_uid="edge-hosts-settings")
