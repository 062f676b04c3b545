"""Fixtures of the resources tests: the machine's PostgreSQL and Redis as the servers add-ons are made on
(skipped where they are absent, never in CI: .ci/run sets REQUIRE_SANDBOX), and a node agent."""
import os
import re

import pytest

from tests.platform_app.sandbox.conftest import make_project, sandbox  # noqa: F401 - fixtures used here too
from tests.processes import process_alive

PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
REDIS_ADMIN = "redis://127.0.0.1:6379/13"
TEST_PREFIX = "addon_t"  # + this process's id: what two runs sharing the servers make stays apart


def _missing(what: str, error: Exception):
    if os.environ.get("REQUIRE_SANDBOX"):
        pytest.fail(f"{what} must run here (REQUIRE_SANDBOX is set): {error}")
    pytest.skip(f"needs {what}: {error}")


def _ours(name: str) -> bool:
    """Whether `name` is an add-on of a test process (`addon_t<pid>_...`): of this one, or of one that is gone (a
    crashed run's leftovers). Another live run's add-ons (CI runs two at once on one server) are left alone."""
    found = re.match(rf"{TEST_PREFIX}(\d+)_", name)
    return bool(found) and (int(found.group(1)) == os.getpid() or not process_alive(int(found.group(1))))


@pytest.fixture
def pg_server(settings):
    """The add-on server: the local PostgreSQL cluster, names prefixed for this test process; what they made is
    dropped afterwards."""
    import psycopg
    from psycopg import sql

    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        _missing("PostgreSQL on 127.0.0.1:5432", exc)
    settings.ADDONS_POSTGRES_URL = PG_ADMIN
    settings.ADDONS_NAME_PREFIX = f"{TEST_PREFIX}{os.getpid()}_"
    yield admin
    for (name,) in admin.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'addon\\_t%'").fetchall():
        if _ours(name):
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
    admin.close()


@pytest.fixture
def redis_server(settings):
    """The add-on server: the local Redis (the add-ons' keys in database 0), names prefixed for this test process;
    the add-on users and keys made meanwhile go afterwards."""
    import redis

    client = redis.Redis.from_url(REDIS_ADMIN)
    try:
        client.ping()
    except redis.RedisError as exc:
        _missing("Redis on 127.0.0.1:6379", exc)
    settings.ADDONS_REDIS_URL = REDIS_ADMIN
    settings.ADDONS_NAME_PREFIX = f"{TEST_PREFIX}{os.getpid()}_"
    yield client
    for user in client.acl_users():
        if _ours(user):
            client.acl_deluser(user)
    zero = redis.Redis(host="127.0.0.1", port=6379, db=0)  # where the add-ons' own keys are
    for key in zero.scan_iter(match=f"{TEST_PREFIX}*", count=1000):
        if _ours(key.decode()):
            zero.delete(key)


@pytest.fixture
def open_redis_server(settings, tmp_path):
    """The add-on server: a redis-server of this test whose `default` user has no password (Redis's own
    default), on a free port, keeping nothing on disk; stopped afterwards."""
    import shutil
    import subprocess
    import time

    import redis

    from tests.platform_app.sandbox.conftest import free_port

    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(binary):
        _missing("redis-server", FileNotFoundError(binary))
    port = free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail(f"redis-server on port {port} did not start")
            time.sleep(0.05)
    settings.ADDONS_REDIS_URL = f"redis://127.0.0.1:{port}/0"
    yield client
    process.terminate()
    process.wait(10)
