"""Flags in the cache that many processes race to raise: one raise wins until the flag is lowered or expires.

What they are for: work that one job should pick up for many requests, such as waking the drain of code
deliveries (otp_app/services/drain.py) once for a burst of sends instead of once per send. On Redis a raise is
one `SET NX EX` on a reused client; elsewhere (tests, the embedded default) the cache's `add`.

A cache that cannot be reached never blocks the caller: `flag_raise` then answers True, so the caller does the
work (publishing a job twice is harmless where these are used), and `flag_lower` does nothing (the flag expires).
"""
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from config.ratelimit import CACHE_ERRORS
from config.redis_pool import cache_client


def flag_raise(key: str, seconds: float) -> bool:
    """Raise the flag for `seconds`; True when this call raised it (it was down), or when the cache is down."""
    try:
        return _set(key, seconds, only_if_down=True)
    except CACHE_ERRORS:
        return True


def flag_hold(key: str, seconds: float) -> None:
    """Keep the flag up for another `seconds`, whoever raised it (the work it stands for is still going on)."""
    try:
        _set(key, seconds, only_if_down=False)
    except CACHE_ERRORS:
        pass  # the flag expires, and the next raise starts the work again


def _set(key: str, seconds: float, *, only_if_down: bool) -> bool:
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        name = backend.make_and_validate_key(key)
        return bool(cache_client(backend).set(name, 1, nx=only_if_down, px=max(int(seconds * 1000), 1)))
    if only_if_down:
        return backend.add(key, 1, timeout=seconds)
    backend.set(key, 1, timeout=seconds)
    return True


def flag_lower(key: str) -> None:
    try:
        caches["default"].delete(key)
    except CACHE_ERRORS:
        pass  # it expires by itself
