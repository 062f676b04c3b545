"""Whether the database answers, within a deadline short enough for a load balancer's health check."""
import logging
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from django.db import connection, transaction

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_running: Future | None = None


def _select_one(timeout: float) -> None:
    try:
        if connection.vendor == "postgresql":
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
                cursor.execute("SELECT 1")
        else:  # SQLite: a local file (and BEGIN would take its write lock)
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
    finally:
        # Never keep a connection a failure may have broken: the next check connects (or borrows) afresh.
        connection.close()


def _run(future: Future, timeout: float) -> None:
    try:
        _select_one(timeout)
    except Exception as exc:  # noqa: BLE001 - whatever the driver raises, the answer is "unavailable"
        future.set_exception(exc)
    else:
        future.set_result(None)


def database_check(*, timeout: float) -> bool:
    """True when `SELECT 1` succeeds within `timeout` seconds. The query runs on a thread of its own, so a
    connection attempt that hangs (a server gone silent, a pool waiting for a connection) cannot hold the
    caller past the deadline; one check runs at a time per process and concurrent callers share it."""
    global _running
    with _lock:
        future = _running
        if future is None or future.done():
            future = _running = Future()
            threading.Thread(target=_run, args=(future, timeout), name="health-database", daemon=True).start()
    try:
        future.result(timeout=timeout)
    except FutureTimeout:
        logger.warning("Health check: the database did not answer within %.1fs.", timeout)
        return False
    except Exception as exc:  # noqa: BLE001
        logger.warning("Health check: the database is unavailable (%s: %s).", type(exc).__name__, exc)
        return False
    return True
