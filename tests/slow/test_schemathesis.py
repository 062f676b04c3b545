"""Schemathesis against the production server: every operation of the three OpenAPI documents, every check.

One gunicorn (uvicorn worker, tests/processes.py) serves a scratch database: a fresh SQLite file in a
temporary DATA_DIR, or a `schemathesis_<random>` PostgreSQL database created and dropped here when DATABASE_URL
is PostgreSQL. It is migrated, loaded with the demo data and seeded with credentials (seed_credentials.py);
schemathesis then runs with schemathesis.toml. Outbound names resolve through a local DNS server that knows
none, and outbound HTTP goes through a proxy address that does not exist, so nothing leaves the machine.
docs/api-testing.md says how to run the same by hand and lists the exclusions.
"""
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.local_servers import DnsServer
from tests.processes import BIN, PYTHON, ROOT, WebServer, child_env, manage

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
# Small for CI (the four runs take about two minutes); a deeper run by hand: SCHEMATHESIS_MAX_EXAMPLES=50.
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "5"))
# A new seed each run, so CI explores different inputs over time; printed (and in every failure message) so a
# failure replays with SCHEMATHESIS_SEED=<seed>.
SEED = int(os.environ.get("SCHEMATHESIS_SEED") or secrets.randbelow(2**31))
# run name: (schema, extra arguments, credentials swapped in). Signing out ends the session it is sent with,
# so it runs alone, with a session of its own.
RUNS = {
    "platform": ("/v1/openapi.json", [], {}),
    "otp": ("/api/v1/openapi.json", [], {}),
    "warehouse": ("/api/openapi.json", ["--exclude-path", "/api/auth/logout"], {}),
    "warehouse-sign-out": ("/api/openapi.json", ["--include-path", "/api/auth/logout"],
                           {"WAREHOUSE_ACCESS": "WAREHOUSE_SIGN_OUT_ACCESS"}),
}
# Git providers "configured" at an address where nothing listens: their start routes answer, and a callback
# never gets past its state check. The identity provider stays unconfigured (503, schemathesis.toml).
PROVIDERS = {f"GIT_{p}_{what}_URL": f"http://127.0.0.1:9/{what.lower()}" for p in "ABC"
             for what in ("AUTHORIZE", "TOKEN", "API", "WEB")}
PROVIDERS.update({f"GIT_{p}_CLIENT_ID": "schemathesis" for p in "ABC"}, GIT_A_INSTALL_URL="http://127.0.0.1:9/install",
                 GIT_A_APP_SLUG="schemathesis")


@pytest.fixture(scope="module")
def database_url():
    """A scratch PostgreSQL database when DATABASE_URL is PostgreSQL (dropped afterwards), else None (SQLite)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        yield None
        return
    import psycopg

    name = f"schemathesis_{secrets.token_hex(4)}"
    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def server(tmp_path_factory, database_url):
    """(base URL, credentials, server log, folder) of a running server on a seeded scratch database."""
    tmp = tmp_path_factory.mktemp("schemathesis")
    dns = DnsServer().start()  # knows no name: every outbound name is refused
    env = child_env(data_dir=tmp / "data", database_url=database_url, OUTBOUND_DNS_SERVERS=dns.address,
                    HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", ALL_PROXY="http://127.0.0.1:9",
                    NO_PROXY="127.0.0.1,localhost", **PROVIDERS)
    web = None
    try:
        manage(env, "migrate", "--noinput")
        manage(env, "demo_data")
        seeded = subprocess.run([PYTHON, "-m", "tests.slow.seed_credentials"], cwd=ROOT, env=env,
                                capture_output=True, text=True, check=True)
        credentials = json.loads(seeded.stdout.strip().splitlines()[-1])
        web = WebServer(env=env, log_dir=tmp).start()
        yield web.url, credentials, web.log_path, tmp
    finally:
        if web is not None:
            web.stop()
        dns.stop()


def run_schemathesis(base: str, run: str, credentials: dict, workdir: Path) -> subprocess.CompletedProcess:
    schema, args, swapped = RUNS[run]
    env = {**os.environ, **credentials, **{name: credentials[source] for name, source in swapped.items()}}
    return subprocess.run(
        [str(BIN / "schemathesis"), "--config-file", str(CONFIG), "run", f"{base}{schema}", *args,
         "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "1",
         "--generation-database", "none", "--request-timeout", "20", "--no-color"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def failures(output: str) -> str:
    """The FAILURES section of schemathesis' report, each line cut short (bodies can be long)."""
    section = output.partition("= FAILURES =")[2].partition("= WARNINGS =")[0] or output[-5000:]
    return "\n".join(line[:300] for line in section.splitlines())


def replay_hint(run: str) -> str:
    return (f"schemathesis seed {SEED} ({run}): replay with SCHEMATHESIS_SEED={SEED} "
            f"SCHEMATHESIS_MAX_EXAMPLES={MAX_EXAMPLES} pytest -m slow tests/slow/test_schemathesis.py")


@pytest.mark.parametrize("run", list(RUNS))
def test_schemathesis_finds_no_failure(server, run):
    base, credentials, log, workdir = server
    sys.stderr.write(replay_hint(run) + "\n")  # shown live with -s, and with the captured output of a failure
    done = run_schemathesis(base, run, credentials, workdir)
    (workdir / f"{run}.txt").write_text(done.stdout + done.stderr)  # the whole report, kept with the server log
    sys.stdout.write(done.stdout[-1500:])  # the summary: operations, test cases, time
    server_log = "\n".join(line[:300] for line in log.read_text().splitlines()[-40:])
    assert done.returncode == 0, (f"{replay_hint(run)}\n{failures(done.stdout)}\n{done.stderr[-3000:]}\n"
                                  f"--- server log ---\n{server_log}")
