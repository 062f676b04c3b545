"""A scratch database for the processes of one test module, and a way for the test process's own ORM to
work on it (tests/processes.py starts the processes)."""
import contextlib
import secrets
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.processes import LOOPBACK


class ScratchDatabase:
    """A database for the processes of one test module: a fresh PostgreSQL database on the server of
    `base_url` (created and dropped here), or, without one, a SQLite file in `data_dir`."""

    def __init__(self, *, base_url: str | None, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.base_url = base_url if base_url and base_url.startswith(("postgres://", "postgresql://")) else None
        self.name = None
        if self.base_url:
            base = urlsplit(self.base_url).path.lstrip("/") or "postgres"
            self.name = f"{base}_faults_{secrets.token_hex(4)}"

    @property
    def vendor(self) -> str:
        return "postgresql" if self.base_url else "sqlite"

    @property
    def host_port(self) -> tuple[str, int]:
        parts = urlsplit(self.base_url)
        return parts.hostname or LOOPBACK, parts.port or 5432

    def url(self, *, port: int | None = None) -> str | None:
        """The DATABASE_URL of the children (None on SQLite: they use DATA_DIR's file); `port` reaches the same
        server through a proxy on 127.0.0.1."""
        if not self.base_url:
            return None
        parts = urlsplit(self.base_url)
        netloc = parts.netloc
        if port is not None:
            creds = netloc.rsplit("@", 1)[0] + "@" if "@" in netloc else ""
            netloc = f"{creds}{LOOPBACK}:{port}"
        return urlunsplit((parts.scheme, netloc, f"/{self.name}", parts.query, ""))

    def _admin(self):
        import psycopg

        parts = urlsplit(self.base_url)
        return psycopg.connect(urlunsplit((parts.scheme, parts.netloc, "/postgres", "", "")), autocommit=True,
                               connect_timeout=10)

    def create(self):
        if self.base_url:
            with self._admin() as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def drop(self) -> None:
        if self.base_url:
            with self._admin() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def connection_settings(self) -> dict:
        """What Django's default connection needs to reach this database from the test process."""
        import environ

        if self.base_url:
            config = environ.Env.db_url_config(self.url())
            config["OPTIONS"] = {"connect_timeout": 10}  # direct connections, no pool
        else:
            config = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(self.data_dir / "db.sqlite3"),
                      "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"}}
        config["CONN_MAX_AGE"] = 0
        return config


@contextlib.contextmanager
def default_database(database: ScratchDatabase):
    """Point this process's default database connection at `database` for the block, so its ORM and services
    work on the same rows as the child processes."""
    from django.db import connections

    connection = connections["default"]
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(database.connection_settings())
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@contextlib.contextmanager
def migrated_database(data_dir: Path):
    """A scratch database (on DATABASE_URL's server, or a SQLite file in `data_dir`), migrated by a child
    process, dropped when the block ends."""
    import os

    from tests.processes import child_env, manage

    database = ScratchDatabase(base_url=os.environ.get("DATABASE_URL"), data_dir=data_dir).create()
    try:
        manage(child_env(data_dir=data_dir, database_url=database.url()), "migrate", "--noinput")
        yield database
    finally:
        database.drop()
