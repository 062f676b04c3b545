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


_cache_client: tuple = (None, None)  # (pool, client): the last client made for the cache, reused while its pool is


def cache_client(backend) -> redis.Redis:
    """A redis-py client on the write pool of Django's Redis cache `backend`. Django makes a new one per call, which
    costs more than a command (redis-py builds its table of response callbacks); clients are thread-safe and the
    pool holds the sockets."""
    global _cache_client
    pool = backend._cache._get_connection_pool(True)
    cached_pool, client = _cache_client
    if cached_pool is not pool:
        client = backend._cache._client(connection_pool=pool)
        _cache_client = (pool, client)
    return client


class SharedConnectionPool(redis.ConnectionPool):
    """The `pool_class` for Django's Redis cache: `from_url` hands back the shared pool."""

    @classmethod
    def from_url(cls, url, **options):
        return shared_pool(url, **options)
