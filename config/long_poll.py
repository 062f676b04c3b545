"""Long polls: waiting inside a request without holding a database connection, one waiting request per caller."""
import time
from contextlib import contextmanager

from django.db import connections

from config.cache_flags import flag_lower, flag_raise


def connections_release() -> None:
    """Give this thread's database connections back (to psycopg's pool, or closed) before it waits on something
    else, so a long poll holds none while it waits: with one held each, a few dozen waiting nodes would take every
    connection the web processes have, and every other request would queue for one. The next query takes a
    connection again. Inside a transaction a connection is kept: closing it would end the transaction."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


def sleep_released(seconds: float) -> None:
    """Sleep holding no database connection (connections_release)."""
    connections_release()
    time.sleep(seconds)


@contextmanager
def waiting_alone(key: str, wait: float, slots: int = 1):
    """The wait a long poll may hold: `wait` for up to `slots` requests waiting under `key` at a time (say, a
    node's heartbeats), 0 for any other meanwhile, which answers at once; so a caller holds `slots` web threads at
    most, however many requests it sends at a time. When the cache cannot be reached every request may wait
    (cache_flags)."""
    taken = None
    if wait > 0:
        taken = next((f"{key}:{slot}" for slot in range(slots) if flag_raise(f"{key}:{slot}", wait + 5)), None)
    if taken is None:
        yield 0.0
        return
    try:
        yield wait
    finally:
        flag_lower(taken)
