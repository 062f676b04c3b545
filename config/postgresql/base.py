"""Django's PostgreSQL backend, with a look at a pooled connection before lending it instead of a round trip.

With CONN_HEALTH_CHECKS on, Django has psycopg's pool run an empty query before lending a connection: a round
trip per request that cost about as much as the request's own query (docs/performance.md), and a pool that found
a dead connection slept a second, then two, then four before the next try, so after a database restart a pool of
dead connections held requests past its timeout. Here the pool runs no check; the connection it lends is looked
at (its socket, no round trip) and, if dead, handed back to be replaced and the next one taken at once.

Integers: with parameters bound by the server, Django sends an integer of an IntegerField expression (a bare int in
`F("amount") + n` or `Value(n)`) as psycopg's 4-byte Int4, which silently wraps past 2^31 (3,000,000,000 became
-1,294,967,296 in a balance). Such a value is sent as a plain int instead: psycopg gives it the type its size needs,
so a bigint expression is right, and an int column refuses it as out of range.

Timestamps: Django reads each `timestamptz` through its own subclass of psycopg's Python loader, which parses the
text in Python and then sets the connection's time zone on it: 4 µs a value, a tenth of the CPU of a list of
twenty deployments (six timestamps a row). With the session in UTC, as Django sets it when USE_TZ is on and
DATABASES names no TIME_ZONE, psycopg's own loader (in C) gives the same datetimes, `datetime.timezone.utc`
included, so connections use it then (`UtcTimestamptzLoader`).
"""
import datetime
import functools
import select

import psycopg
from django.db.backends.postgresql import base, operations
from psycopg import adapt, adapters
from psycopg.types import numeric
from psycopg.types.datetime import TimestamptzLoader


def connection_usable(conn) -> bool:
    """Whether an idle connection can serve a query; a round trip only when its socket has something to read.

    An idle connection in good health has nothing to read: the server speaks only when asked. A backend that
    was terminated, a server that restarted or a proxy that dropped the link leaves an error message or the end
    of the stream on the socket; then an empty query tells. A link that died without a word is found by the
    request's own query, as it would be a moment after any check.
    """
    if conn.closed or conn.broken:
        return False
    poller = select.poll()  # not select.select, which fails on a descriptor past 1023
    poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
    if not poller.poll(0):
        return True
    try:
        conn.execute("")
    except psycopg.Error:
        return False
    return True


_FITS = {numeric.Int2: 2 ** 15, numeric.Int4: 2 ** 31}  # the wrappers that would cut a value short


class DatabaseOperations(operations.DatabaseOperations):
    def adapt_integerfield_value(self, value, internal_type):
        adapted = super().adapt_integerfield_value(value, internal_type)
        limit = _FITS.get(type(adapted))
        return value if limit and not -limit <= value < limit else adapted


_C_TIMESTAMPTZ = adapters._get_optimised(TimestamptzLoader)  # psycopg's C loader where psycopg has one


class UtcTimestamptzLoader:
    """Stands for psycopg's own `timestamptz` loader, with what Django reads of the loader it registers: a C class
    takes no attributes of ours, and Django compares the registered loader's `timezone` with the connection's to
    decide whether a cursor needs a loader of its own."""

    format = _C_TIMESTAMPTZ.format
    timezone = datetime.timezone.utc

    def __new__(cls, oid, context=None):
        return _C_TIMESTAMPTZ(oid, context)


@functools.cache
def _adapters_utc(template: adapt.AdaptersMap) -> adapt.AdaptersMap:
    """Django's adapters with psycopg's own loader for `timestamptz` (the session is in UTC)."""
    utc = adapt.AdaptersMap(template)
    utc.register_loader("timestamptz", UtcTimestamptzLoader)
    return utc


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def get_connection_params(self):
        params = super().get_connection_params()
        if params.get("context") is not None and self.timezone is datetime.timezone.utc:
            params["context"] = _adapters_utc(params["context"])
        return params

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        while self.pool is not None and not connection_usable(connection):
            self.pool.putconn(connection)  # broken: the pool drops it and opens another in the background
            connection = super().get_new_connection(conn_params)
        return connection
