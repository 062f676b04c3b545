"""A bounded in-process cache whose entries every process drops together.

A `LocalCache` is a dict in the process (a web worker). Its entries live `ttl` seconds at most, and every process
drops all of them when the cache's shared version key (in the Django cache, Redis when configured) changes:
`invalidate()` clears this process at once and writes a new version, which the other processes read at most every
`check_setting` seconds. For data read on every request and changed rarely: the hosts the edge serves, the pages
it caches, the warehouse directory's facets.
"""
import secrets
import threading
import time
import weakref
from collections import OrderedDict

from django.conf import settings
from django.core.cache import cache

MISSING = object()
_ALL: "weakref.WeakSet[LocalCache]" = weakref.WeakSet()
clears = 0  # clears of any local cache in this process: what was derived while it did not move rests on no old entry


def local_caches_clear() -> None:
    """Reset every local cache of this process (tests, between two databases and cleared shared caches: a version
    remembered from before would not match the one found later, and the cache would empty itself at some check in
    the middle of the next test)."""
    for local in list(_ALL):
        local.reset()


class LocalCache:
    def __init__(self, name: str, *, ttl: float, check_setting: str | None, max_entries: int = 10_000,
                 max_bytes: int | None = None, one_compute_at_a_time: bool = False):
        self.name, self.ttl, self.max_entries, self.max_bytes = name, ttl, max_entries, max_bytes
        # for values whose computing holds much memory: the requests that miss meanwhile wait for it and read it
        self._computing = threading.Lock() if one_compute_at_a_time else None
        # the setting that says how often the shared version is read; None: no shared version (entries end by age)
        self.check_setting = check_setting
        self._entries: OrderedDict = OrderedDict()
        self._bytes = 0
        self._version = None
        self._next_check = 0.0
        self._generation = 0  # bumped by every clear: a value computed before a clear is not stored after it
        self._lock = threading.Lock()
        _ALL.add(self)

    @property
    def version_key(self) -> str:
        return f"local-cache:{self.name}:version"

    def shared_version(self):
        """The version all processes' entries belong to, as the shared cache holds it (None before the first
        invalidation): a value shared through the cache, stamped with it, is current while they match. Raises when
        the cache is unreachable."""
        return cache.get(self.version_key)

    @property
    def generation(self) -> int:
        return self._generation

    def _sync(self, now: float) -> None:
        self._next_check = now + getattr(settings, self.check_setting)
        try:
            version = self.shared_version()
        except Exception:  # noqa: BLE001 - cache unreachable: keep entries only for their short ttl
            version = MISSING
        if version != self._version:
            self._version = version
            self.clear()

    def get(self, key):
        now = time.monotonic()
        if now >= self._next_check and self.check_setting is not None:
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

    def holds(self, generation: int, now: float) -> bool:
        """Whether what was read here at `generation` is still current without reading the shared version: nothing
        cleared since, and no version check due (the event loop's test, which must not wait on the cache server)."""
        return generation == self._generation and now < self._next_check

    def clear(self) -> None:
        global clears
        with self._lock:
            clears += 1
            self._generation += 1
            self._entries.clear()
            self._bytes = 0

    def reset(self) -> None:
        """Empty, and read the shared version again at the next read, as a new cache would."""
        self.clear()
        self._next_check = 0.0
        self._version = None

    def invalidate(self) -> None:
        """Drop every entry here now, and in every other process at its next version check."""
        self.clear()
        version = secrets.token_hex(8)
        try:
            cache.set(self.version_key, version, None)
            self._version = version
        except Exception:  # noqa: BLE001 - cache unreachable: other processes see the change within their ttl
            pass

    def get_or_compute(self, key, compute, *, size=0, keep=None):
        """The cached value of `key`, or `compute()`'s, stored unless an invalidation came meanwhile or
        `keep(value)` is false. `size` is a number of bytes, or a function of the value that gives it."""
        value = self.get(key)
        if value is MISSING and self._computing is not None:
            with self._computing:
                return self._compute(key, compute, size=size, keep=keep)
        if value is MISSING:
            return self._compute(key, compute, size=size, keep=keep)
        return value

    def _compute(self, key, compute, *, size, keep):
        value = self.get(key)  # another thread may have computed it while this one waited
        if value is MISSING:
            generation = self._generation
            value = compute()
            if keep is None or keep(value):
                self.set(key, value, size=size(value) if callable(size) else size, generation=generation)
        return value
