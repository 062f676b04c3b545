"""The sign-in race on SQLite as `make run` serves it: a SQLite file shared by several server processes.

(pytest's in-memory SQLite cannot hold concurrent writers from threads, so the race runs against the real
server: gunicorn with uvicorn workers, four processes, on a fresh SQLite file.)
"""
import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.factories import PASSWORD
from tests.platform_app.identity.conftest import OWNER, STRANGER

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
LIMIT = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


EMAIL = "race@example.com"


def manage(env: dict, *args: str) -> None:
    done = subprocess.run([str(BIN / "python"), "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def server(tmp_path):
    """(base URL, SQLite file) of a running server on a fresh SQLite file holding one user (whatever database
    the rest of the suite runs on: this race is about SQLite as `make run` serves it)."""
    db_file = tmp_path / "db.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.test", DATABASE_URL=f"sqlite:///{db_file}",
               DATA_DIR=str(tmp_path / "data"), TRUSTED_PROXY_COUNT="1", AUTH_FAILURES_PER_ACCOUNT_AND_IP=str(LIMIT),
               PYTHONUNBUFFERED="1")
    manage(env, "migrate", "--noinput")
    manage(env, "shell", "-c", "from platform_app.models import User; "
                               f"User.objects.create_user(email={EMAIL!r}, password={PASSWORD!r}, name='Race')")
    port, log = free_port(), tmp_path / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN / "gunicorn"), "config.asgi:application", "-k", "uvicorn_worker.UvicornWorker",
                                 "--workers", "4", "--bind", f"127.0.0.1:{port}", "--timeout", "60"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield base, db_file
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sign_in(base: str, email: str, password: str, address: str) -> httpx.Response:
    # the server trusts one proxy: the rightmost X-Forwarded-For entry is the client, the rest is forged
    return httpx.post(f"{base}/v1/auth/sign-in", json={"email": email, "password": password},
                      headers={"X-Forwarded-For": f"10.6.6.{time.monotonic_ns() % 250}, {address}"}, timeout=30)


@pytest.mark.slow
def test_concurrent_wrong_passwords_against_a_sqlite_file(server):
    base, db_file = server
    barrier, statuses = threading.Barrier(20), []

    def attempt():
        barrier.wait()
        statuses.append(sign_in(base, EMAIL, "wrong-password-1", STRANGER).status_code)

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses.count(401) == LIMIT and statuses.count(429) == 20 - LIMIT
    with sqlite3.connect(db_file) as db:
        (count,) = db.execute("SELECT count FROM platform_app_attemptcounter WHERE key = ?",
                              (f"signin:pair:{EMAIL}|{STRANGER}",)).fetchone()
    assert count == LIMIT

    owner = sign_in(base, EMAIL, PASSWORD, OWNER)
    assert owner.status_code == 200 and owner.json()["accessToken"]
    assert sign_in(base, EMAIL, PASSWORD, STRANGER).status_code == 429
