"""Fixed-window counters in the cache (Redis when configured), shared by every service."""
import time

from django.core.cache import cache

from config.errors import RateLimited


def _window(key: str, window: int) -> tuple[str, int]:
    start = int(time.time()) // window * window
    return f"rl:{key}:{start}", start + window - int(time.time())


def hits(key: str, window: int) -> int:
    k, _ = _window(key, window)
    return cache.get(k, 0)


def hit(key: str, window: int) -> int:
    """Count one event; returns the count in the current window."""
    k, remaining = _window(key, window)
    cache.add(k, 0, timeout=remaining + 1)
    try:
        return cache.incr(k)
    except ValueError:  # expired between add and incr
        cache.set(k, 1, timeout=remaining + 1)
        return 1


def check(key: str, limit: int, window: int, message: str = "Too many attempts; try again later.", **kwargs) -> None:
    """Refuse (429 with Retry-After) when the window already holds `limit` events."""
    if hits(key, window) >= limit:
        _, remaining = _window(key, window)
        raise RateLimited(message, retry_after=remaining, **kwargs)


def consume(key: str, limit: int, window: int, message: str = "Too many requests; try again later.", **kwargs) -> None:
    """Count one event and refuse it when it goes over `limit`."""
    if hit(key, window) > limit:
        _, remaining = _window(key, window)
        raise RateLimited(message, retry_after=remaining, **kwargs)


def reset(key: str, window: int) -> None:
    cache.delete(_window(key, window)[0])


def client_ip(request) -> str:
    from django.conf import settings

    if getattr(settings, "TRUST_X_FORWARDED_FOR", False):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.META.get("REMOTE_ADDR", "") or "unknown"
