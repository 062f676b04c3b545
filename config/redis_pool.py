"""One Redis connection pool per process and URL, shared by every client that asks for it.

Django builds a new cache backend object per thread and, under ASGI, per request context; with the
stock pool class each of those opened its own Redis connection. `CACHES[...]["OPTIONS"]["pool_class"]`
points here so they all draw from one pool (redis-py resets a pool it finds in a forked child)."""
import threading

import redis

_pools: dict = {}
_lock = threading.Lock()


def shared_pool(url: str, **options) -> redis.ConnectionPool:
    key = (url, tuple(sorted((k, repr(v)) for k, v in options.items())))
    pool = _pools.get(key)
    if pool is None:
        with _lock:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = redis.ConnectionPool.from_url(url, **options)
    return pool


def shared_client(url: str) -> redis.Redis:
    """A client on the process-wide pool of `url` (clients are cheap; the pool holds the sockets)."""
    return redis.Redis(connection_pool=shared_pool(url))


class SharedConnectionPool(redis.ConnectionPool):
    """The `pool_class` for Django's Redis cache: `from_url` hands back the shared pool."""

    @classmethod
    def from_url(cls, url, **options):
        return shared_pool(url, **options)
