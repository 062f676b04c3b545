"""PostgreSQL's pooled connections: a broken one is replaced before a request sees it, a sound one is lent as is
(config/postgresql/base.py)."""
import threading
import time

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from config.postgresql.base import connection_usable
from tests.conftest import closing
from tests.factories import ApiTokenFactory

pytestmark = pytest.mark.postgres


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")


def _admin():
    return psycopg.connect(**connection.get_connection_params(), autocommit=True)


def _terminate(pids) -> None:
    with _admin() as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [list(pids)])


def test_a_connection_is_usable_until_the_server_ends_it(postgres):
    with _admin() as conn:
        assert connection_usable(conn)  # idle and sound: nothing on the socket
        assert conn.execute("SELECT 1").fetchone() == (1,)
        _terminate([conn.info.backend_pid])
        time.sleep(0.1)  # the server's goodbye reaches the socket
        assert not connection_usable(conn)
        assert conn.broken and not connection_usable(conn)  # known broken: no need to ask again
    assert not connection_usable(conn)  # closed


def _pool_holds(count: int) -> None:
    """Make the process's pool hold at least `count` connections: as many threads each borrow one at once."""
    barrier = threading.Barrier(count)

    @closing  # back to the pool
    def borrow():
        connection.ensure_connection()
        barrier.wait(timeout=10)

    threads = [threading.Thread(target=borrow) for _ in range(count)]
    [t.start() for t in threads]
    [t.join() for t in threads]


def test_a_request_after_every_pooled_connection_was_cut_answers(postgres, transactional_db):
    """Every connection the process's pool holds (six) is terminated between two requests: the second one
    answers 200 on a connection opened again. (psycopg's own check slept 1, 2, 4, 8 s between the dead ones
    and gave up after the pool's 10 s: a 503.)"""
    raw = "svc_pooltest" + "p" * 30
    ApiTokenFactory(raw=raw)
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/v1/auth/me").status_code == 200
    connection.close()  # back to the pool, as at the end of a request
    _pool_holds(6)
    with _admin() as admin:
        held = [pid for (pid,) in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'").fetchall()]
    assert len(held) >= 6
    _terminate(held)
    time.sleep(0.1)  # the server's goodbyes reach the sockets
    response = client.get("/v1/auth/me")
    assert response.status_code == 200, response.content
    assert response.json()["actingAs"]["type"] == "api_token"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] not in held
