"""Factories and fixtures of the dedicated database tests.

`cluster` points the platform at the PostgreSQL server of DEDICATED_DB_TEST_URL (default
postgres://postgres@127.0.0.1:5432/postgres): skipped with the reason when it cannot be reached, failed instead
when REQUIRE_SANDBOX is set (CI). Every role and database the platform makes during the test starts with a
prefix of this test process (`ddbt<pid>_`) and is dropped when the test ends; what a crashed run left (a prefix
whose process is gone) is dropped by the next test that uses the fixture."""
import json
import os
import re

import factory
import pytest
from factory.django import DjangoModelFactory

from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup
from platform_app.services.env.crypto import encrypt
from tests.platform_app.projects.factories import ProjectFactory
from tests.processes import process_alive

TEST_URL = os.environ.get("DEDICATED_DB_TEST_URL", "postgres://postgres@127.0.0.1:5432/postgres")
TEST_PREFIX = "ddbt"


class DedicatedDatabaseFactory(DjangoModelFactory[DedicatedDatabase]):
    """A ready database an outside provisioner reported (nothing on a cluster)."""

    class Meta:
        model = DedicatedDatabase

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"db{n}")
    status = DedicatedDatabase.Status.READY
    provisioner = DedicatedDatabase.Provisioner.EXTERNAL
    credentials_encrypted = factory.LazyFunction(lambda: encrypt(json.dumps(
        {"host": "db.internal.example", "port": 5432, "database": "app", "user": "app", "password": "factory-pw"})))


class DedicatedDatabaseBackupFactory(DjangoModelFactory[DedicatedDatabaseBackup]):
    class Meta:
        model = DedicatedDatabaseBackup

    database = factory.SubFactory(DedicatedDatabaseFactory)
    kind = DedicatedDatabaseBackup.Kind.MANUAL
    status = DedicatedDatabaseBackup.Status.DONE
    size_bytes = 2048
    storage_name = factory.LazyAttribute(lambda o: f"backups/{o.database.pk}/factory.dump")


def cluster_problem(url: str = TEST_URL) -> str | None:
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0]
    return None


class Cluster:
    """The test's view of the server: admin queries, connections as a database's own role."""

    def __init__(self, url: str, prefix: str):
        self.url, self.prefix = url, prefix

    def admin(self, dbname: str | None = None):
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(self.url)
        if dbname:
            params["dbname"] = dbname
        return psycopg.connect(**params, autocommit=True, connect_timeout=5)

    def connect(self, credentials: dict, **override):
        """A connection as the credentials' role (what an app holding them does)."""
        import psycopg

        c = {**credentials, **override}
        return psycopg.connect(host=c["host"], port=c["port"], dbname=c["database"], user=c["user"],
                               password=c["password"], autocommit=True, connect_timeout=5)

    def databases(self) -> set[str]:
        with self.admin() as conn:
            return {r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)",
                                               [self.prefix])}

    def roles(self) -> set[str]:
        with self.admin() as conn:
            return {r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE starts_with(rolname, %s)",
                                               [self.prefix])}

    def drop_all(self, keep=lambda name: False) -> None:
        from psycopg import sql

        with self.admin() as conn:
            for name in self.databases():
                if not keep(name):
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            for name in self.roles():
                if not keep(name):
                    conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def _alive(name: str) -> bool:
    """Whether the test process whose prefix `name` carries (`ddbt<pid>_...`) still runs."""
    found = re.match(rf"{TEST_PREFIX}(\d+)_", name)
    return process_alive(int(found.group(1))) if found else True  # a name not of a test process: not ours


def dedicated_db_env() -> dict:
    """What the browser tests' platform processes get: the test server, names prefixed for this test process."""
    return {"DEDICATED_DB_POSTGRES_URL": TEST_URL, "DEDICATED_DB_NAME_PREFIX": f"{TEST_PREFIX}{os.getpid()}_"}


def require_cluster() -> None:
    """Skip the test without the test server (fail it when REQUIRE_SANDBOX is set)."""
    problem = cluster_problem()
    if problem:
        if os.environ.get("REQUIRE_SANDBOX"):
            pytest.fail(f"PostgreSQL must be reachable at {TEST_URL} (REQUIRE_SANDBOX is set): {problem}")
        pytest.skip(f"needs PostgreSQL at {TEST_URL} (DEDICATED_DB_TEST_URL): {problem}")


@pytest.fixture
def cluster(settings, tmp_path):
    """The platform provisions on the test server, names prefixed for this process; backups in `tmp_path`."""
    require_cluster()
    settings.DEDICATED_DB_PROVISIONER = "postgres"
    settings.DEDICATED_DB_POSTGRES_URL = TEST_URL
    settings.DEDICATED_DB_NAME_PREFIX = f"{TEST_PREFIX}{os.getpid()}_"
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}
    server = Cluster(TEST_URL, settings.DEDICATED_DB_NAME_PREFIX)
    Cluster(TEST_URL, TEST_PREFIX).drop_all(keep=_alive)  # what crashed runs left
    server.drop_all()
    yield server
    server.drop_all()

