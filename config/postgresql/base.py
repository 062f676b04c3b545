"""Django's PostgreSQL backend whose pool checks a connection before lending it without a round trip.

With CONN_HEALTH_CHECKS on, Django gives psycopg's pool a check that runs an empty query on every borrow:
a round trip per request that cost about as much as the request's own query (docs/performance.md). The check
here asks the socket first. Django offers no setting for the check, so the pool it builds gets this one.
"""
import select

from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


def check_connection(conn) -> None:
    """Raise if the connection is unusable; a round trip only when its idle socket has something to read.

    An idle connection in good health has nothing to read: the server speaks only when asked. A backend that
    was terminated, a server that restarted or a proxy that dropped the link leaves an error message or the end
    of the stream on the socket; then the full check (an empty query) runs and fails, and the pool replaces the
    connection. A link that died without a word is found by the request's query, as it would be a moment after
    any check.
    """
    if not (conn.closed or conn.broken):
        poller = select.poll()  # not select.select, which fails on a descriptor past 1023
        poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
        if not poller.poll(0):
            return
    ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        if pool is not None and pool._check is ConnectionPool.check_connection:  # set once, when Django builds it
            pool._check = check_connection
        return pool
