"""Per-project, per-minute counters of what the edge served: requests, 5xx answers and a latency histogram,
kept in the cache (Redis in production: one pipelined round trip per request; never a database write).
`record` is called once per served request by platform_app/edge.py; the alert metrics read `window`."""
import logging
import time

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)

# Upper bounds (ms) of the latency buckets; the last bucket is everything slower.
BUCKETS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)


_last_warning = float("-inf")


def _warn(what: str, exc: Exception) -> None:
    """At most one warning a minute: a cache outage must not add a log line to every served request."""
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= 60:
        _last_warning = now
        logger.warning("edge metrics %s (%s: %s)", what, type(exc).__name__, exc)


def _minute(at: float) -> int:
    return int(at) // 60


def _key(project_id: str, minute: int, name: str) -> str:
    return f"edgem:{project_id}:{minute}:{name}"


def _bucket(duration_ms: float) -> int:
    return next((i for i, bound in enumerate(BUCKETS_MS) if duration_ms <= bound), len(BUCKETS_MS))


def record(project_id: str, status: int, duration_seconds: float, *, at: float | None = None) -> None:
    """Count one served request. A cache failure is logged and forgotten: serving never depends on it."""
    minute = _minute(time.time() if at is None else at)
    names = ["n", f"b{_bucket(duration_seconds * 1000)}"] + (["5xx"] if status >= 500 else [])
    keys = [_key(project_id, minute, name) for name in names]
    ttl = settings.EDGE_METRICS_TTL_SECONDS
    try:
        backend = caches["default"]
        if isinstance(backend, RedisCache):
            made = [backend.make_and_validate_key(k) for k in keys]
            pipe = backend._cache.get_client(made[0], write=True).pipeline(transaction=False)
            for name in made:
                pipe.incr(name)
                pipe.expire(name, ttl, nx=True)
            pipe.execute()
            return
        for k in keys:
            cache.add(k, 0, timeout=ttl)
            try:
                cache.incr(k)
            except ValueError:
                cache.set(k, 1, timeout=ttl)
    except Exception as exc:  # noqa: BLE001 - the cache is down or refuses: metrics are best effort
        _warn("not recorded", exc)


def window(project_id: str, minutes: int, *, now: float | None = None) -> dict:
    """Totals over the last `minutes` minutes (the current one included): requests, errors (5xx), buckets."""
    last = _minute(time.time() if now is None else now)
    names = ["n", "5xx"] + [f"b{i}" for i in range(len(BUCKETS_MS) + 1)]
    keys = [_key(project_id, m, name) for m in range(last - minutes + 1, last + 1) for name in names]
    try:
        values = cache.get_many(keys)
    except Exception as exc:  # noqa: BLE001
        _warn("unreadable", exc)
        values = {}

    def total(name):
        return sum(int(v) for k, v in values.items() if k.endswith(f":{name}"))

    return {"requests": total("n"), "errors": total("5xx"),
            "buckets": [total(f"b{i}") for i in range(len(BUCKETS_MS) + 1)]}


def p95_ms(buckets: list[int]) -> float | None:
    """The upper bound of the bucket holding the 95th percentile (the slowest bucket counts as twice the last
    bound); None without requests."""
    count = sum(buckets)
    if not count:
        return None
    running = 0
    for i, n in enumerate(buckets):
        running += n
        if running >= 0.95 * count:
            return float(BUCKETS_MS[i] if i < len(BUCKETS_MS) else BUCKETS_MS[-1] * 2)
    return float(BUCKETS_MS[-1] * 2)
