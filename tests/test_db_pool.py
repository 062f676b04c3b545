"""PostgreSQL's pooled connections: a broken one is replaced before a request sees it, a sound one is lent as is
(config/postgresql/base.py)."""
import psycopg
import pytest
from django.db import connection
from psycopg_pool import ConnectionPool
from rest_framework.test import APIClient

from config.postgresql.base import check_connection
from tests.factories import ApiTokenFactory

pytestmark = pytest.mark.postgres


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")


def _terminate(pids) -> None:
    with psycopg.connect(**connection.get_connection_params()) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [list(pids)])


def _pool(size: int) -> ConnectionPool:
    params = connection.get_connection_params()
    return ConnectionPool(kwargs={**params, "autocommit": True}, min_size=size, max_size=size, open=True,
                          check=check_connection, timeout=10)


def test_a_sound_connection_is_lent_again_and_a_terminated_one_replaced(postgres):
    with _pool(1) as pool:
        with pool.connection() as conn:
            first = conn.info.backend_pid
        with pool.connection() as conn:
            assert conn.info.backend_pid == first  # checked without being replaced
        _terminate([first])
        with pool.connection() as conn:
            assert conn.info.backend_pid != first
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_check_asks_the_server_only_when_the_socket_has_something_to_say(postgres):
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as conn:
        check_connection(conn)  # idle and sound: nothing to read, no error
        _terminate([conn.info.backend_pid])
        with pytest.raises(psycopg.OperationalError):
            check_connection(conn)  # the server's goodbye is on the socket: the full check runs and fails
        with pytest.raises(psycopg.OperationalError):
            check_connection(conn)  # and a connection known broken fails at once


def test_a_request_after_the_servers_connections_were_cut_answers_normally(postgres, transactional_db):
    """Every connection the process's pool holds is terminated between two requests: the second one still
    answers 200, on a connection the pool opened again (after psycopg's back-off of a second or two)."""
    raw = "svc_pooltest" + "p" * 30
    ApiTokenFactory(raw=raw)
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/v1/auth/me").status_code == 200
    assert connection.pool._check is check_connection  # the settings' backend gives Django's pool this check
    connection.close()  # back to the pool, as at the end of a request
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
        held = [pid for (pid,) in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'").fetchall()]
    assert held
    _terminate(held)
    response = client.get("/v1/auth/me")
    assert response.status_code == 200, response.content
    assert response.json()["actingAs"]["type"] == "api_token"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] not in held
