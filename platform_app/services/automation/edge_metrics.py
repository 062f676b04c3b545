"""Per-project, per-minute counters of what the edge served: requests, 5xx answers, a latency histogram and the
bytes of the answers, plus per-hour requests and bytes, kept in the cache (Redis in production; never a database
write). Alerts read windows of them; billing's metering task rolls finished hours into usage records.

`record` is called once per served request by platform_app/edge.py and only counts in the process; the counts
reach the cache in one pipelined round trip at most every EDGE_METRICS_FLUSH_SECONDS (a request's own cost stays
a dict update). `window`, which the alert metrics read, flushes this process's counts first. A process that dies
loses at most its last unflushed second.

Which projects' hour counts changed since metering last took them, and which deployments were served in an
hour, are a Redis set per hour with Redis; without it (one machine, the file cache) a folder of empty files named by
id under DATA_DIR/edge-marks, one folder per hour: creating a file is atomic and idempotent across the machine's
processes, as SADD is, and removing one is how a metering run takes it, as SPOP does. A flush adds its projects
after their counts, so a project metering takes is read with every count flushed before it was taken, and one
flushed later is marked again. Metering takes at most a batch of them a run, never every project."""
import contextlib
import logging
import os
import re
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

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


def _hour_key(project_id: str, hour: int, name: str) -> str:
    return f"edgeh:{project_id}:{hour}:{name}"


def _due_key(hour: int) -> str:
    """The set of the projects whose counts of an hour changed since metering last took them (named as the set of
    the projects served was, which it replaces, so an hour counted across an upgrade keeps its members)."""
    return f"edges:{hour}"


def _visited_key(hour: int) -> str:
    return f"edgevs:{hour}"


def _bucket(duration_ms: float) -> int:
    return next((i for i, bound in enumerate(BUCKETS_MS) if duration_ms <= bound), len(BUCKETS_MS))


_pending: Counter = Counter()  # cache key → count not yet flushed
_members: dict = defaultdict(set)  # set key → members not yet flushed
_marked: dict[str, set[str]] = {}  # mark folder → ids this process marked there: the MARKED_FOLDERS newest
MARKED_FOLDERS = 4  # a forgotten folder's ids are only touched again
_pending_lock = threading.Lock()
_last_flush = 0.0


def record(project_id: str, status: int, duration_seconds: float, *, at: float | None = None, size: int = 0,
           deployment_id: str | None = None) -> None:
    """Count one served request of `size` bytes (in the process; flushed to the cache about once a second)."""
    global _last_flush
    minute = _minute(time.time() if at is None else at)
    hour = minute // 60
    names = ["n", f"b{_bucket(duration_seconds * 1000)}"] + (["5xx"] if status >= 500 else [])
    with _pending_lock:
        for name in names:
            _pending[_key(project_id, minute, name)] += 1
        _pending[_hour_key(project_id, hour, "n")] += 1
        _members[_due_key(hour)].add(project_id)
        if size > 0:
            _pending[_key(project_id, minute, "bytes")] += size
            _pending[_hour_key(project_id, hour, "bytes")] += size
        if deployment_id:
            _members[_visited_key(hour)].add(deployment_id)
        due = time.monotonic() - _last_flush >= settings.EDGE_METRICS_FLUSH_SECONDS
        if due:
            _last_flush = time.monotonic()
    if due:
        flush()


def flush() -> None:
    """Add this process's counts to the cache. A cache failure is logged and the counts dropped: serving never
    depends on it."""
    global _pending, _members
    with _pending_lock:
        pending, _pending = _pending, Counter()
        members, _members = _members, defaultdict(set)
    if not pending:
        return
    ttl = settings.EDGE_METRICS_TTL_SECONDS
    try:
        backend = caches["default"]
        if isinstance(backend, RedisCache):
            made = {backend.make_and_validate_key(k): n for k, n in pending.items()}
            pipe = backend._cache.get_client(next(iter(made)), write=True).pipeline(transaction=False)
            for name, n in made.items():
                pipe.incrby(name, n)
                pipe.expire(name, ttl, nx=True)
            for name, values in members.items():  # after the counts: a project taken from a set has them
                pipe.sadd(backend.make_and_validate_key(name), *values)
                pipe.expire(backend.make_and_validate_key(name), ttl, nx=True)
            pipe.execute()
            return
        for k, n in pending.items():
            cache.add(k, 0, timeout=ttl)
            try:
                cache.incr(k, n)
            except ValueError:
                cache.set(k, n, timeout=ttl)
        for name, values in members.items():  # after the counts, as above
            _marks_add(name, values, again=name.startswith("edges:"))
    except Exception as exc:  # noqa: BLE001 - the cache is down or refuses: metrics are best effort
        _warn("not recorded", exc)


# Marks: the hour's sets without Redis ---------------------------------------------------------------------

_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # project and deployment ids: nothing else becomes a file name


def _marks_root() -> Path:
    return Path(settings.DATA_DIR) / "edge-marks"


def _marks_folder(name: str) -> Path:
    return _marks_root() / name.replace(":", "-")  # "edges:<hour>" → edges-<hour>


def _marks_add(name: str, values, *, again: bool = False) -> None:
    """Mark `values` in the set's folder; a value this process marked there before is skipped unless `again` (a
    project's counts changed again: metering may have taken its mark since)."""
    folder = _marks_folder(name)
    done = _marked.get(str(folder))
    if done is None:
        folder.mkdir(parents=True, exist_ok=True)
        _marks_sweep(keep_after=int(name.rsplit(":", 1)[1]) - settings.EDGE_METRICS_TTL_SECONDS // 3600)
        done = _marked[str(folder)] = set()
        while len(_marked) > MARKED_FOLDERS:
            del _marked[next(iter(_marked))]
    for value in values:
        if (again or value not in done) and _ID.match(value):
            os.close(os.open(folder / value, os.O_CREAT | os.O_WRONLY, 0o600))
            done.add(value)


def _marks_sweep(*, keep_after: int) -> None:
    """Remove the folders of hours up to `keep_after` (past the counters' lifetime), once per new hour; another
    process removing the same folder meanwhile is no error."""
    for folder in _marks_root().iterdir():
        hour = folder.name.rsplit("-", 1)[-1]
        if hour.isdigit() and int(hour) <= keep_after:
            with contextlib.suppress(OSError):
                for mark in folder.iterdir():
                    mark.unlink(missing_ok=True)
                folder.rmdir()


def _marks_take(name: str, limit: int) -> set[str]:
    """Up to `limit` marks of the set, each removed by the one who takes it (a concurrent run takes others)."""
    folder, taken = _marks_folder(name), set()
    with contextlib.suppress(FileNotFoundError), os.scandir(folder) as marks:
        for mark in marks:
            if len(taken) >= limit:
                break
            with contextlib.suppress(FileNotFoundError):
                os.unlink(mark.path)
                taken.add(mark.name)
    return taken


def _marks_count(name: str) -> int:
    folder = _marks_folder(name)
    return len(os.listdir(folder)) if folder.is_dir() else 0


def window(project_id: str, minutes: int, *, now: float | None = None) -> dict:
    """Totals over the last `minutes` minutes (the current one included): requests, errors (5xx), buckets."""
    flush()
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


def _set_take(name: str, limit: int) -> set[str]:
    """Up to `limit` members of an hour's set, taken out of it (SPOP; else the marks')."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return _marks_take(name, limit)
    key = backend.make_and_validate_key(name)
    return {m.decode() for m in backend._cache.get_client(key, write=True).spop(key, limit) or ()}


def _set_put_back(name: str, members) -> None:
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        key = backend.make_and_validate_key(name)
        backend._cache.get_client(key, write=True).sadd(key, *members)
    else:
        _marks_add(name, members, again=True)


def _set_size(name: str) -> int:
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return _marks_count(name)
    key = backend.make_and_validate_key(name)
    return backend._cache.get_client(key).scard(key)


def _get_many(keys: list[str], batch: int = 2000) -> dict:
    found = {}
    for i in range(0, len(keys), batch):
        found.update(cache.get_many(keys[i:i + batch]))
    return found


def hour_totals(hour_start: float, *, limit: int) -> dict[str, dict]:
    """Requests and bytes in the hour starting at `hour_start` (a Unix time on the hour) of up to `limit` projects
    whose counts of that hour changed since they were last taken: each is taken, then its counts read, so a count
    flushed after the read marks its project again for a later run."""
    flush()
    hour = _minute(hour_start) // 60
    ids: list[str] = []
    try:
        ids = list(_set_take(_due_key(hour), limit))
        values = _get_many([_hour_key(pk, hour, name) for pk in ids for name in ("n", "bytes")])
    except Exception as exc:  # noqa: BLE001
        _warn("unreadable", exc)
        if ids:  # taken but not read: for the next run
            with contextlib.suppress(Exception):
                _set_put_back(_due_key(hour), ids)
        return {}
    totals = {}
    for pk in ids:
        requests = int(values.get(_hour_key(pk, hour, "n")) or 0)
        if requests:
            totals[pk] = {"requests": requests, "bytes": int(values.get(_hour_key(pk, hour, "bytes")) or 0)}
    return totals


def hour_totals_left(hour_start: float) -> int:
    """How many projects' counts of the hour wait for a metering run (0 when the cache cannot say)."""
    try:
        return _set_size(_due_key(_minute(hour_start) // 60))
    except Exception as exc:  # noqa: BLE001
        _warn("unreadable", exc)
        return 0


def deployments_visited(hour_start: float, *, limit: int) -> set[str]:
    """Up to `limit` of the deployments the edge served in the hour starting at `hour_start`, taken out of the
    hour's set (each needs its first visit recorded once)."""
    flush()
    try:
        return _set_take(_visited_key(_minute(hour_start) // 60), limit)
    except Exception as exc:  # noqa: BLE001
        _warn("unreadable", exc)
        return set()


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
