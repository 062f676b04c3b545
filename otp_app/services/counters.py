"""Send limits in one Redis round trip: INCR and EXPIRE NX per counter, all in one pipeline on the cache's client.

The counters are `config.ratelimit`'s (same keys, same windows, plain integers), so its `hits`, `check` and
`reset` read them. Other cache backends (tests, the embedded default) and a Redis error go through
`ratelimit.hit`, which owns what happens when the cache is down (it fails open)."""
import logging
import time
from dataclasses import dataclass, field

import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from config import ratelimit
from config.errors import RateLimited

log = logging.getLogger(__name__)


@dataclass
class Limit:
    key: str
    limit: int
    window: int
    message: str
    extra: dict = field(default_factory=dict)  # RateLimited keyword arguments, e.g. `code`


def _window(key: str, window: int) -> tuple[str, int]:
    now = int(time.time())
    start = now // window * window
    return f"rl:{key}:{start}", start + window - now


def _refuse(limit: Limit) -> RateLimited:
    return RateLimited(limit.message, retry_after=_window(limit.key, limit.window)[1], **limit.extra)


def counters_consume(*, limits: list[Limit]) -> None:
    """Count one event against every limit; the first one that goes over refuses it (429 with Retry-After), and
    the limits after it are left as they were, as if counted one after the other."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return _one_by_one(limits)
    names = [backend.make_and_validate_key(_window(lim.key, lim.window)[0]) for lim in limits]
    try:
        client = backend._cache.get_client(names[0], write=True)
        pipe = client.pipeline(transaction=False)
        for name, lim in zip(names, limits):
            pipe.incr(name)
            pipe.expire(name, _window(lim.key, lim.window)[1] + 1, nx=True)
        counts = pipe.execute()[::2]
    except (redis.RedisError, OSError):
        log.warning("send limits: Redis error, counting through config.ratelimit", exc_info=True)
        return _one_by_one(limits)
    for i, (count, lim) in enumerate(zip(counts, limits)):
        if int(count) > lim.limit:
            if i + 1 < len(limits):
                _uncount(client, names[i + 1:])
            raise _refuse(lim)


def _uncount(client, names: list[str]) -> None:
    try:
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.decr(name)
        pipe.execute()
    except (redis.RedisError, OSError):
        pass  # an event counted once too often, in a window that expires by itself


def _one_by_one(limits: list[Limit]) -> None:
    for lim in limits:
        if ratelimit.hit(lim.key, lim.window) > lim.limit:
            raise _refuse(lim)
