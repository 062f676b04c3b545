"""A bounded in-process cache whose entries every process drops together.

A `LocalCache` is a dict in the process (a web worker). Its entries live `ttl` seconds at most, and every process
drops all of them when the cache's shared version key (in the Django cache, Redis when configured) changes:
`invalidate()` clears this process at once and writes a new version, which the other processes read at most every
`check_setting` seconds. For data read on every request and changed rarely: the hosts the edge serves, the pages
it caches, the warehouse directory's facets.

Entries may carry a tag (the edge tags a host's entry with its project): `invalidate_tags(tags)` drops only the
entries with those tags, here at once and elsewhere at the next check (a numbered log of tag sets in the shared
cache; a process that fell too far behind, or finds a number gone, clears everything). Untagged entries stay, and
so do the generation and `clears`: what was derived from them (kept answers) stays current.
"""
import random
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
        self._tagged: dict = {}  # tag -> keys of the entries carrying it
        self._tag_drops = 0  # bumped by every drop of tags: likewise for a value computed meanwhile
        self._tag_log_seen = None  # the number of the last tag set read from the shared log
        self._tag_log_missing = None  # (number, since when) of a set found missing: written late, or lost
        self._lock = threading.Lock()
        _ALL.add(self)

    @property
    def version_key(self) -> str:
        return f"local-cache:{self.name}:version"

    @property
    def tag_log_key(self) -> str:
        return f"local-cache:{self.name}:tag-log"

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
            shared = cache.get_many([self.version_key, self.tag_log_key])
        except Exception:  # noqa: BLE001 - cache unreachable: keep entries only for their short ttl
            shared = {self.version_key: MISSING}
        version, logged = shared.get(self.version_key), shared.get(self.tag_log_key, 0)
        if version != self._version:
            self._version = version
            self._tag_log_seen = logged
            self.clear()
        elif logged != self._tag_log_seen:
            self._tags_catch_up(logged)

    TAG_LOG_KEPT = 256  # tag sets a process may be behind and still catch up; the log keeps each an hour
    TAG_LOG_WAIT_SECONDS = 2.0  # how long a numbered set may be missing (not written yet) before all is dropped

    def _tags_catch_up(self, logged: int) -> None:
        seen = self._tag_log_seen
        if seen is None or not 0 < logged - seen <= self.TAG_LOG_KEPT:
            self._tag_log_seen = logged
            if seen is not None:
                self.clear()  # too far behind, or the log restarted
            return  # (the first look, before anything was kept: the log's position is all it needs)
        try:
            found = cache.get_many([f"{self.tag_log_key}:{n}" for n in range(seen + 1, logged + 1)])
        except Exception:  # noqa: BLE001
            found = None
        applied, tags = seen, set()
        for n in range(seen + 1, logged + 1):
            if found is None or f"{self.tag_log_key}:{n}" not in found:
                break
            tags.update(found[f"{self.tag_log_key}:{n}"])
            applied = n
        self._drop_tags(tags)
        if applied < logged:
            # A writer numbers its set, then writes it: a set missing now may be written in a moment (on a busy
            # platform, most checks would otherwise drop everything). Still missing after TAG_LOG_WAIT_SECONDS,
            # it is lost (its writer died, or it expired): everything goes.
            now = time.monotonic()
            number, since = self._tag_log_missing or (None, now)
            if number != applied + 1:
                number, since = applied + 1, now
            if now - since >= self.TAG_LOG_WAIT_SECONDS:
                self.clear()
                applied, number = logged, None
            self._tag_log_missing = (number, since) if number is not None else None
        else:
            self._tag_log_missing = None
        self._tag_log_seen = applied

    def get(self, key):
        now = time.monotonic()
        if now >= self._next_check and self.check_setting is not None:
            self._sync(now)
        entry = self._entries.get(key)
        if entry is None:
            return MISSING
        expires, value, _size, _tag = entry
        if expires <= now:
            return MISSING
        return value

    @property
    def stamp(self) -> tuple:
        """What `set(generation=...)` compares for a value that may carry a tag: no clear and no drop of tags
        since."""
        return self._generation, self._tag_drops

    def set(self, key, value, *, size: int = 0, generation: int | tuple | None = None, tag=None) -> None:
        if generation is not None and generation != (self.stamp if isinstance(generation, tuple) else self._generation):
            return  # invalidated while the value was computed
        if self.max_bytes is not None and size > self.max_bytes:
            return
        with self._lock:
            self._pop(key)
            # each entry lives between half its lifetime and all of it: entries made together (a busy minute,
            # a process's first requests) do not all expire together and come back as one wave of misses
            self._entries[key] = (time.monotonic() + self.ttl * (0.5 + random.random() / 2), value, size, tag)
            self._bytes += size
            if tag is not None:
                self._tagged.setdefault(tag, set()).add(key)
            while self._entries and (len(self._entries) > self.max_entries
                                     or (self.max_bytes is not None and self._bytes > self.max_bytes)):
                self._pop(next(iter(self._entries)))

    def _pop(self, key) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._bytes -= entry[2]
        if entry[3] is not None:
            keys = self._tagged.get(entry[3])
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._tagged[entry[3]]

    def _drop_tags(self, tags) -> None:
        with self._lock:
            self._tag_drops += 1
            for tag in tags:
                for key in list(self._tagged.get(tag, ())):
                    self._pop(key)

    def invalidate_tags(self, tags) -> None:
        """Drop the entries carrying any of `tags`, here now and in every other process at its next check."""
        tags = list(tags)
        self._drop_tags(tags)
        try:
            cache.add(self.tag_log_key, 0, None)
            number = cache.incr(self.tag_log_key)
            cache.set(f"{self.tag_log_key}:{number}", tags, 3600)
            if self._tag_log_seen == number - 1:
                self._tag_log_seen = number  # ours: nothing more to drop here
        except Exception:  # noqa: BLE001 - cache unreachable: other processes see the change within their ttl
            pass

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
            self._tagged.clear()
            self._bytes = 0

    def reset(self) -> None:
        """Empty, and read the shared version again at the next read, as a new cache would."""
        self.clear()
        self._next_check = 0.0
        self._version = None
        self._tag_log_seen = None
        self._tag_log_missing = None

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
