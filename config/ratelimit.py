"""Fixed-window counters in the cache (Redis when configured), for volume limits shared by every service.

Attempts at secrets (sign-in passwords, MFA codes, preview passwords) are not counted here but in the
database (`platform_app.services.identity.throttle`), where counting and deciding is one atomic statement.

The cache may be unreachable (Redis restarting, network trouble). The Redis client has short socket timeouts
(`REDIS_CACHE_TIMEOUT_SECONDS`), and a cache error never escapes: by default the limit **fails open** (the event
is allowed; a warning is logged at most once a minute). A caller passing `fail_closed=True` refuses instead,
with 503 `service_unavailable`.
"""
import logging
import time
from dataclasses import dataclass, field

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

from config.client_ip import client_ip  # noqa: F401  (kept importable from here for every caller)
from config.errors import RateLimited, ServiceUnavailable
from config.redis_pool import cache_client

logger = logging.getLogger(__name__)

try:
    from redis.exceptions import RedisError
except ImportError:  # pragma: no cover - redis is pinned, but the embedded default does not need it
    RedisError = OSError

CACHE_ERRORS = (RedisError, OSError)
WARN_INTERVAL_SECONDS = 60
_last_warning = float("-inf")


class _CacheDown(Exception):
    pass


def _warn(exc: Exception) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_INTERVAL_SECONDS:
        _last_warning = now
        logger.warning("Rate-limit cache unreachable (%s: %s); limits fail open unless marked fail-closed.",
                       type(exc).__name__, exc)


def _cached(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except CACHE_ERRORS as exc:
        _warn(exc)
        raise _CacheDown from exc


def _unavailable() -> ServiceUnavailable:
    return ServiceUnavailable("Rate limiting is temporarily unavailable; try again shortly.",
                              headers={"Retry-After": "5"})


def _window(key: str, window: int) -> tuple[str, int]:
    start = int(time.time()) // window * window
    return f"rl:{key}:{start}", start + window - int(time.time())


def hits(key: str, window: int, *, fail_closed: bool = False) -> int:
    k, _ = _window(key, window)
    try:
        return _cached(cache.get, k, 0)
    except _CacheDown:
        if fail_closed:
            raise _unavailable()
        return 0


def _incr_many(windows: list[tuple[str, int]], peek: str = "") -> list[int]:
    """Count one event in each (cache key, seconds left) window. On Redis: INCR and EXPIRE NX per window, all in
    one pipelined round trip; elsewhere (tests, the embedded default) add + incr per window. With `peek`, the
    last item is whether that cache key holds a value, read in the same round trip."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        names = [backend.make_and_validate_key(k) for k, _ in windows]
        pipe = cache_client(backend).pipeline(transaction=False)
        for name, (_, remaining) in zip(names, windows):
            pipe.incr(name)
            pipe.expire(name, remaining + 1, nx=True)
        if peek:
            pipe.exists(backend.make_and_validate_key(peek))
        replies = pipe.execute()
        return [int(count) for count in replies[:2 * len(windows):2]] + ([bool(replies[-1])] if peek else [])
    counts = []
    for k, remaining in windows:
        cache.add(k, 0, timeout=remaining + 1)
        try:
            counts.append(cache.incr(k))
        except ValueError:  # expired between add and incr
            cache.set(k, 1, timeout=remaining + 1)
            counts.append(1)
    if peek:
        counts.append(cache.get(peek) is not None)
    return counts


def hit(key: str, window: int, *, fail_closed: bool = False) -> int:
    """Count one event; returns the count in the current window (0 when the cache is down and failing open)."""
    try:
        return _cached(_incr_many, [_window(key, window)])[0]
    except _CacheDown:
        if fail_closed:
            raise _unavailable()
        return 0


@dataclass(frozen=True)
class Limit:
    key: str
    limit: int
    window: int
    message: str = "Too many requests; try again later."
    extra: dict = field(default_factory=dict)  # RateLimited keyword arguments, e.g. `code`


def consume_all(limits: list[Limit], *, fail_closed: bool = False, peek: str = "") -> bool:
    """Count one event against every limit in one round trip; the first limit that goes over refuses it (429),
    and the limits after it are given their count back, as if counted one after the other. `peek` names a cache
    key read in the same round trip: whether it held a value (False when the cache is down)."""
    windows = [_window(lim.key, lim.window) for lim in limits]
    try:
        counts = _cached(_incr_many, windows, peek)
    except _CacheDown:
        if fail_closed:
            raise _unavailable()
        return False
    for i, (count, lim) in enumerate(zip(counts, limits)):
        if count > lim.limit:
            _uncount([k for k, _ in windows[i + 1:]])
            raise RateLimited(lim.message, retry_after=windows[i][1], **lim.extra)
    return bool(peek) and counts[-1]


def give_back(limits: list[Limit]) -> None:
    """Take back the event consume_all counted against each limit (it turned out not to be one: a replay)."""
    _uncount([_window(lim.key, lim.window)[0] for lim in limits])


def _uncount(keys: list[str]) -> None:
    for k in keys:
        try:
            _cached(cache.decr, k)
        except (_CacheDown, ValueError):
            pass  # counted once too often, in a window that expires by itself


def check(key: str, limit: int, window: int, message: str = "Too many attempts; try again later.", *,
          fail_closed: bool = False, **kwargs) -> None:
    """Refuse (429 with Retry-After) when the window already holds `limit` events."""
    if hits(key, window, fail_closed=fail_closed) >= limit:
        _, remaining = _window(key, window)
        raise RateLimited(message, retry_after=remaining, **kwargs)


def consume(key: str, limit: int, window: int, message: str = "Too many requests; try again later.", *,
            fail_closed: bool = False, **kwargs) -> None:
    """Count one event and refuse it when it goes over `limit`."""
    if hit(key, window, fail_closed=fail_closed) > limit:
        _, remaining = _window(key, window)
        raise RateLimited(message, retry_after=remaining, **kwargs)


def reset(key: str, window: int) -> None:
    try:
        _cached(cache.delete, _window(key, window)[0])
    except _CacheDown:
        pass  # the window expires by itself
