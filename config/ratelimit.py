"""Fixed-window counters for volume limits shared by every service (OTP sends, the firewall's rate_limit rules,
API and form throttles).

Counting is atomic on every store, so parallel requests never pass a limit: `RATELIMIT_STORE=cache` is one
script of INCR + EXPIRE NX per window on Redis (the default when REDIS_URL is set); `database` is one
`INSERT ... ON CONFLICT DO UPDATE ... RETURNING` on the `config.counters` table for all of an event's windows
(the default without Redis: SQLite and PostgreSQL both lock the row). Ended windows' rows are swept hourly
(`counters_prune`). "cache" on another backend (the file cache reads, then writes) is for tests only; production
settings refuse it.

Attempts at secrets (sign-in passwords, MFA codes, preview passwords) are not counted here but in the
database (`platform_app.services.identity.throttle`), where counting and deciding is one atomic statement.

The cache may be unreachable (Redis restarting, network trouble). The Redis client has short socket timeouts
(`REDIS_CACHE_TIMEOUT_SECONDS`), and a cache error never escapes: by default the limit **fails open** (the event
is allowed; a warning is logged at most once a minute). A caller passing `fail_closed=True` refuses instead,
with 503 `service_unavailable`.
"""
import hashlib
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache, caches
from django.db import connection
from django.db.models import F
from django.core.cache.backends.redis import RedisCache

from config.client_ip import client_ip  # noqa: F401  (kept importable from here for every caller)
from config.counters.models import Counter
from config.errors import RateLimited, ServiceUnavailable
from config.redis_pool import cache_client

logger = logging.getLogger(__name__)

try:
    from redis.exceptions import RedisError
except ImportError:  # pragma: no cover - redis is pinned, but the embedded default does not need it
    RedisError = OSError

CACHE_ERRORS = (RedisError, OSError)
WARN_INTERVAL_SECONDS = 60
ROW_KEY_MAX = 400  # Counter.key; a longer key keeps its start and ends in its hash
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


def _in_database() -> bool:
    return settings.RATELIMIT_STORE == "database"


def _row_key(key: str) -> str:
    if len(key) <= ROW_KEY_MAX:
        return key
    return key[:ROW_KEY_MAX - 65] + "#" + hashlib.sha256(key.encode()).hexdigest()


def _upsert_sql(rows: int) -> str:
    q = connection.ops.quote_name
    table, key, expires, count = q(Counter._meta.db_table), q("key"), q("expires_at"), q("count")
    values = ", ".join(["(%s, %s, 1)"] * rows)
    return (f"INSERT INTO {table} AS c ({key}, {expires}, {count}) VALUES {values} "
            f"ON CONFLICT ({key}) DO UPDATE SET {count} = c.{count} + 1 RETURNING {key}, {count}")


def _incr_in_database(windows: list[tuple[str, int]]) -> list[int]:
    """One event in each window, by one statement; rows taken in key order, so that two events sharing windows
    never wait on each other in a circle."""
    now = int(time.time())
    keys = [_row_key(k) for k, _ in windows]
    params = []
    for k, (_, remaining) in sorted(zip(keys, windows)):
        params += [k, now + remaining + 1]
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(len(windows)), params)
        counts = dict(cursor.fetchall())
    return [int(counts[k]) for k in keys]


def counters_prune(*, now: float | None = None) -> int:
    """Drop the database counters of ended windows; how many."""
    deleted, _ = Counter.objects.filter(expires_at__lt=int(now if now is not None else time.time())).delete()
    return deleted


def hits(key: str, window: int, *, fail_closed: bool = False) -> int:
    k, _ = _window(key, window)
    if _in_database():
        count = Counter.objects.filter(key=_row_key(k), expires_at__gte=int(time.time())).values_list(
            "count", flat=True).first()
        return count or 0
    try:
        return _cached(cache.get, k, 0)
    except _CacheDown:
        if fail_closed:
            raise _unavailable()
        return 0


# KEYS: the windows' counters, then (when there are more keys than ARGV) the key to peek at; ARGV: each counter's
# time to live. One command instead of a pipeline of INCR, EXPIRE NX per window and EXISTS: a third of the client's
# work for a send's counters, and atomic as a whole.
COUNT_SCRIPT = """
local replies = {}
for i, key in ipairs(KEYS) do
  if i <= #ARGV then
    replies[i] = redis.call('INCR', key)
    redis.call('EXPIRE', key, ARGV[i], 'NX')
  else
    replies[i] = redis.call('EXISTS', key)
  end
end
return replies
"""
_count_scripts: dict = {}  # id(client) -> its registered script (EVALSHA, loaded again after a SCRIPT FLUSH)


def _count_script(client):
    script = _count_scripts.get(id(client))
    if script is None or script.registered_client is not client:
        script = _count_scripts[id(client)] = client.register_script(COUNT_SCRIPT)
    return script


def _incr_many(windows: list[tuple[str, int]], peek: str = "") -> list[int]:
    """Count one event in each (cache key, seconds left) window. On Redis: one script (INCR and EXPIRE NX per
    window) in one round trip; in the database one upsert; elsewhere (tests) add + incr per window. With `peek`,
    the last item is whether that cache key holds a value, read in the same round trip on Redis."""
    backend = caches["default"]
    if _in_database():
        counts = _incr_in_database(windows)
        if peek:
            counts.append(cache.get(peek) is not None)
        return counts
    if isinstance(backend, RedisCache):
        keys = [backend.make_and_validate_key(k) for k, _ in windows]
        ttls = [remaining + 1 for _, remaining in windows]
        if peek:
            keys.append(backend.make_and_validate_key(peek))
        replies = _count_script(cache_client(backend))(keys=keys, args=ttls)
        return [int(count) for count in replies[:len(windows)]] + ([bool(replies[-1])] if peek else [])
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
    if _in_database():
        if keys:
            Counter.objects.filter(key__in=[_row_key(k) for k in keys], count__gt=0).update(count=F("count") - 1)
        return
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
    if _in_database():
        Counter.objects.filter(key=_row_key(_window(key, window)[0])).delete()
        return
    try:
        _cached(cache.delete, _window(key, window)[0])
    except _CacheDown:
        pass  # the window expires by itself
