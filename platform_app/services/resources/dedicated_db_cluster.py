"""What the platform does on the PostgreSQL cluster of DEDICATED_DB_POSTGRES_URL, for dedicated databases: roles,
databases, template copies, `pg_dump` and `pg_restore`. Names come from the caller (generated, never the user's
text) and are quoted with psycopg.sql; passwords reach the server only as SCRAM verifiers, and the command-line
tools get their credentials through PG* variables, never as arguments. Every failure is a `ClusterError` whose
message holds no password."""
import os
import shutil
import subprocess
from pathlib import Path

import psycopg
from django.conf import settings
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

CONNECT_TIMEOUT = 10
# conninfo keys → the libpq variables the command-line tools read
LIBPQ_ENV = {"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "password": "PGPASSWORD", "dbname": "PGDATABASE",
             "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY"}


class ClusterError(Exception):
    """The cluster refused or could not be reached; the message is safe to show."""


def _message(exc: Exception, secrets_: tuple[str, ...] = ()) -> str:
    text = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc) or type(exc).__name__
    for secret in (*secrets_, admin_conninfo().get("password") or ""):
        if secret:
            text = text.replace(secret, "***")
    return text.strip().splitlines()[0][:500] if text.strip() else type(exc).__name__


def admin_conninfo(dbname: str | None = None) -> dict:
    """The admin connection's parameters (DEDICATED_DB_POSTGRES_URL), on `dbname` when given."""
    url = settings.DEDICATED_DB_POSTGRES_URL
    params = conninfo_to_dict(url) if url else {}
    if dbname:
        params["dbname"] = dbname
    return params


def server_address() -> tuple[str, int]:
    """Host and port of the cluster, as the platform (and the nodes' relays) reach it."""
    params = admin_conninfo()
    return params.get("host") or "127.0.0.1", int(params.get("port") or 5432)


def connect(dbname: str | None = None) -> psycopg.Connection:
    if not settings.DEDICATED_DB_POSTGRES_URL:  # libpq's defaults would reach whatever local server there is
        raise ClusterError("DEDICATED_DB_POSTGRES_URL is not set.")
    try:
        return psycopg.connect(**admin_conninfo(dbname), autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise ClusterError(f"The PostgreSQL server of DEDICATED_DB_POSTGRES_URL cannot be reached: "
                           f"{_message(exc)}") from exc


def _run(conn, statement, params=None, secrets_: tuple[str, ...] = ()):
    try:
        return conn.execute(statement, params)
    except psycopg.Error as exc:
        raise ClusterError(_message(exc, secrets_)) from exc


# Roles and databases ----------------------------------------------------------------------------

def role_create(*, role: str, password: str) -> None:
    """A login role that can do nothing but own its databases (CONNECTION LIMIT DEDICATED_DB_CONNECTION_LIMIT)."""
    with connect() as conn:
        verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode()
        _run(conn, sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} CONNECTION LIMIT {} NOSUPERUSER NOCREATEDB NOCREATEROLE "
                           "NOREPLICATION NOBYPASSRLS").format(
            sql.Identifier(role), sql.Literal(verifier), sql.Literal(int(settings.DEDICATED_DB_CONNECTION_LIMIT))))
        if not _run(conn, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
            # a non-superuser admin (CREATEROLE) must belong to the role to make databases it owns
            _run(conn, sql.SQL("GRANT {} TO current_user").format(sql.Identifier(role)))


def database_create(*, name: str, owner: str, template: str | None = None) -> None:
    """`CREATE DATABASE name OWNER owner [TEMPLATE template]`, then only its owner may connect. A template that
    is in use raises `TemplateInUse`."""
    statement = sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner))
    if template:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with connect() as conn:
        try:
            conn.execute(statement)
        except psycopg.errors.ObjectInUse as exc:
            raise TemplateInUse(_message(exc)) from exc
        except psycopg.Error as exc:
            raise ClusterError(_message(exc)) from exc
        _run(conn, sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))


class TemplateInUse(ClusterError):
    """The source of a template copy has connections (CREATE DATABASE ... TEMPLATE needs none)."""


def ownership_move(*, database: str, old: str, new: str) -> None:
    """Inside `database` (a template copy), hand what `old` owns to `new`. REASSIGN OWNED also moves the
    databases `old` owns, so they are given back in the same transaction."""
    with connect(database) as conn, conn.transaction():
        owned = [row[0] for row in _run(conn, "SELECT datname FROM pg_database WHERE datdba = "
                                              "(SELECT oid FROM pg_roles WHERE rolname = %s)", [old])]
        _run(conn, sql.SQL("REASSIGN OWNED BY {} TO {}").format(sql.Identifier(old), sql.Identifier(new)))
        for name in owned:
            _run(conn, sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(name), sql.Identifier(old)))


def database_drop(name: str) -> None:
    """Drop `name` if it exists, ending its connections first."""
    with connect() as conn:
        _run(conn, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def role_drop(role: str) -> None:
    with connect() as conn:
        _run(conn, sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def database_size(name: str) -> int | None:
    with connect() as conn:
        row = _run(conn, "SELECT pg_database_size(datname) FROM pg_database WHERE datname = %s", [name]).fetchone()
    return row[0] if row else None


def names_like(prefix: str) -> tuple[list[str], list[str]]:
    """(databases, roles) whose names start with `prefix`."""
    pattern = prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"
    with connect() as conn:
        databases = [r[0] for r in _run(conn, "SELECT datname FROM pg_database WHERE datname LIKE %s", [pattern])]
        roles = [r[0] for r in _run(conn, "SELECT rolname FROM pg_roles WHERE rolname LIKE %s", [pattern])]
    return databases, roles


# pg_dump and pg_restore -------------------------------------------------------------------------

def _tool(name: str) -> str:
    folder = settings.DEDICATED_DB_PG_BIN_DIR
    found = str(Path(folder) / name) if folder else shutil.which(name)
    if not found or not os.access(found, os.X_OK):
        raise ClusterError(f"{name} is not installed on this worker (DEDICATED_DB_PG_BIN_DIR, or PATH).")
    return found


def _command(argv: list[str], conninfo: dict) -> None:
    """Run a PostgreSQL tool with the connection in libpq variables (nothing secret in `argv`)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "PGCONNECT_TIMEOUT": str(CONNECT_TIMEOUT)}
    env.update({LIBPQ_ENV[k]: str(v) for k, v in conninfo.items() if k in LIBPQ_ENV and v not in (None, "")})
    password = conninfo.get("password") or ""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True,
                              timeout=settings.DEDICATED_DB_COMMAND_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(f"{Path(argv[0]).name} took longer than DEDICATED_DB_COMMAND_TIMEOUT_SECONDS "
                           f"({settings.DEDICATED_DB_COMMAND_TIMEOUT_SECONDS} s).") from exc
    if done.returncode:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()][-3:]
        text = " ".join(lines) or f"exit status {done.returncode}"
        raise ClusterError(f"{Path(argv[0]).name} failed: " + (text.replace(password, "***") if password else text))


def dump(*, conninfo: dict, path: Path) -> int:
    """`pg_dump --format=custom` of the database `conninfo` opens into `path`; its size in bytes."""
    _command([_tool("pg_dump"), "--format=custom", "--no-password", f"--file={path}"], conninfo)
    return path.stat().st_size


def restore(*, path: Path, database: str, role: str) -> None:
    """Restore the custom-format dump at `path` into the empty `database` of the cluster, every object created as
    `role` (the admin connects, then SET ROLE), in one transaction: all of it or nothing."""
    _command([_tool("pg_restore"), "--no-owner", "--no-privileges", f"--role={role}", "--single-transaction",
              "--exit-on-error", "--no-password", f"--dbname={database}", str(path)], admin_conninfo())
