"""The production web server's own settings (config/gunicorn.py) as gunicorn and its uvicorn workers apply them:
which forwarded headers are believed, what the access log keeps, where `make run` listens and how many malloc
arenas a worker's threads share."""
import asyncio
import logging
import os
import platform
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from gunicorn.config import Config as GunicornConfig
from uvicorn.config import Config as UvicornConfig

ROOT = Path(__file__).resolve().parents[1]
SERVER_VARIABLES = ("FORWARDED_ALLOW_IPS", "TRUSTED_PROXY_COUNT", "WEB_BIND", "WEB_PORT")


def gunicorn_config(monkeypatch, tmp_path=None, **environ) -> GunicornConfig:
    """config/gunicorn.py read under `environ`, into a gunicorn Config as `gunicorn -c` builds it."""
    for name in SERVER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, str(value))
    values = runpy.run_path(str(ROOT / "config" / "gunicorn.py"))
    cfg = GunicornConfig()
    for name, value in values.items():
        if name in cfg.settings and not name.startswith("_"):
            cfg.set(name, value)
    if tmp_path is not None:
        cfg.set("accesslog", str(tmp_path / "access.log"))
        cfg.set("errorlog", str(tmp_path / "error.log"))
    return cfg


def client_seen(cfg: GunicornConfig, *, peer: str, forwarded: str) -> str:
    """The client address the application sees when `peer` connects with `X-Forwarded-For: forwarded`, through
    the middleware uvicorn wraps the application in, configured as uvicorn_worker configures it."""
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"][0]

    config = UvicornConfig(app=app, forwarded_allow_ips=cfg.forwarded_allow_ips, log_config=None)
    config.load()
    scope = {"type": "http", "client": (peer, 40000), "headers": [(b"x-forwarded-for", forwarded.encode())],
             "scheme": "http", "method": "GET", "path": "/", "query_string": b""}
    asyncio.run(config.loaded_app(scope, None, None))
    return seen["client"]


def test_by_default_no_peer_is_believed_not_even_loopback(monkeypatch):
    cfg = gunicorn_config(monkeypatch)
    assert client_seen(cfg, peer="127.0.0.1", forwarded="203.0.113.9") == "127.0.0.1"
    assert client_seen(cfg, peer="::1", forwarded="203.0.113.9") == "::1"
    assert client_seen(cfg, peer="10.0.0.2", forwarded="203.0.113.9") == "10.0.0.2"


def test_forwarded_allow_ips_alone_trusts_nothing(monkeypatch):
    """Django ignores X-Forwarded-For without TRUSTED_PROXY_COUNT: the server must agree with it."""
    cfg = gunicorn_config(monkeypatch, FORWARDED_ALLOW_IPS="127.0.0.1")
    assert client_seen(cfg, peer="127.0.0.1", forwarded="203.0.113.9") == "127.0.0.1"


def test_behind_a_named_proxy_only_that_proxy_is_believed(monkeypatch):
    cfg = gunicorn_config(monkeypatch, TRUSTED_PROXY_COUNT=1, FORWARDED_ALLOW_IPS="10.0.0.2")
    assert client_seen(cfg, peer="10.0.0.2", forwarded="6.6.6.6, 203.0.113.9") == "203.0.113.9"
    assert client_seen(cfg, peer="127.0.0.1", forwarded="203.0.113.9") == "127.0.0.1"


STREAM_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c3JfMSJ9.c2lnbmF0dXJl"
HOOK_SECRET = "dh_Zq1XyHookSecretValue0123456789abcdef"


def test_the_access_log_keeps_tokens_and_hook_secrets_out(monkeypatch, tmp_path):
    """What uvicorn writes for a request, through the handlers gunicorn's logger class gives it."""
    cfg = gunicorn_config(monkeypatch, tmp_path)
    log = cfg.logger_class(cfg)
    access = logging.getLogger("uvicorn.access")
    saved = access.handlers, access.propagate, access.level
    access.handlers, access.propagate = log.access_log.handlers, False
    access.setLevel(logging.INFO)
    try:
        for path in (f"/v1/orgs/acme/deployments/dpl_1/logs/stream?lastEventId=7&token={STREAM_TOKEN}",
                     f"/v1/hooks/deploy/{HOOK_SECRET}",
                     "/v1/invitations/inv-secret-token-AbC123/accept",
                     "/verify-email/?token=verify-secret-XyZ",
                     "/v1/auth/git-a/callback?code=oauth-code-123&state=st4te"):
            access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:40000", "GET", path, "1.1", 200)
    finally:
        access.handlers, access.propagate = saved[0], saved[1]
        access.setLevel(saved[2])
        for handler in log.access_log.handlers:
            handler.flush()
    text = (tmp_path / "access.log").read_text()
    for secret in (STREAM_TOKEN, HOOK_SECRET, "inv-secret-token-AbC123", "verify-secret-XyZ", "oauth-code-123"):
        assert secret not in text
    assert "/logs/stream?lastEventId=7&token=[redacted]" in text  # what is no secret stays readable
    assert '"GET /v1/hooks/deploy/[redacted] HTTP/1.1" 200' in text
    assert "/v1/invitations/[redacted]/accept" in text


def make_run(*variables: str) -> str:
    """The command `make run` would start honcho with (make -n prints it without running anything)."""
    done = subprocess.run(["make", "-n", "run", *variables], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if "honcho start" in line)


def test_make_run_listens_on_loopback_unless_told_otherwise():
    assert "WEB_BIND=127.0.0.1:8000" in make_run()
    assert "WEB_BIND=127.0.0.1:9000" in make_run("PORT=9000")
    assert "WEB_BIND=0.0.0.0:8000" in make_run("HOST=0.0.0.0")


@pytest.mark.parametrize("bind, expected", [("127.0.0.1:8000", ["127.0.0.1:8000"]), ("", ["0.0.0.0:8000"])])
def test_the_server_binds_what_web_bind_says(monkeypatch, bind, expected):
    environ = {"WEB_BIND": bind} if bind else {}
    assert gunicorn_config(monkeypatch, **environ).bind == expected


ARENAS_SEEN = """
import ctypes, runpy, sys, threading
server = runpy.run_path("config/gunicorn.py")
if sys.argv[1] == "worker":
    server["post_fork"](None, None)  # what gunicorn calls in a new worker
together = threading.Barrier(12)

def request():
    held = [bytearray(100_000) for _ in range(3)]  # under glibc's mmap threshold: from the thread's arena
    together.wait()

threads = [threading.Thread(target=request) for _ in range(12)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
ctypes.CDLL(None).malloc_stats()  # one "Arena N:" paragraph per arena, on stderr
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc arenas are glibc's (not on macOS or musl)")
def test_a_workers_threads_share_two_malloc_arenas():
    def arenas(process: str) -> int:
        done = subprocess.run([sys.executable, "-c", ARENAS_SEEN, process], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, env={k: v for k, v in os.environ.items() if k != "WEB_MALLOC_ARENAS"})
        assert done.returncode == 0, done.stderr
        return done.stderr.count("Arena ")

    assert arenas("plain") > 2  # glibc's default: an arena per thread, up to eight per core
    assert arenas("worker") == 2


SLOW_HEAD = "GET /health HTTP/1.1\r\nHost: localhost\r\n"


def test_the_server_closes_connections_whose_request_head_is_too_slow(tmp_path):
    """gunicorn -c config/gunicorn.py as `Procfile` runs it, with a 2 s head deadline: connections trickling a
    header line every half second, or sending nothing, are closed within it; a prompt request is served."""
    import socket
    import time

    from tests.processes import LOOPBACK, PYTHON, Process, child_env, free_port, wait_until

    port = free_port()
    env = child_env(data_dir=tmp_path / "data", WEB_BIND=f"{LOOPBACK}:{port}", WEB_CONCURRENCY="1",
                    WEB_HEADER_TIMEOUT="2", WEB_KEEPALIVE="2")
    web = Process("web", [PYTHON, "-m", "gunicorn", "config.asgi:application", "-c", "config/gunicorn.py"],
                  env=env, log_dir=tmp_path).start()

    def connect() -> socket.socket:
        conn = socket.create_connection((LOOPBACK, port), timeout=5)
        conn.settimeout(0.2)
        return conn

    def closed(conn: socket.socket) -> bool:
        try:
            return conn.recv(4096) == b""
        except TimeoutError:
            return False
        except OSError:  # reset by the server
            return True

    def answered() -> bool:
        try:
            with connect() as conn:
                conn.settimeout(5)
                conn.sendall(SLOW_HEAD.encode() + b"Connection: close\r\n\r\n")
                return conn.recv(64).startswith(b"HTTP/1.1 ")
        except OSError:
            return False

    try:
        wait_until(answered, timeout=120, what="the server to answer", logs=[web])
        started = time.monotonic()
        slow = [connect() for _ in range(5)]
        idle = connect()
        for conn in slow:
            conn.sendall(SLOW_HEAD.encode())
        open_ones = set(range(5))
        while open_ones and time.monotonic() - started < 10:  # bounded: the deadline is 2 s
            for i in sorted(open_ones):
                try:
                    slow[i].sendall(f"X-Trickle-{i}: {time.monotonic()}\r\n".encode())
                except OSError:
                    open_ones.discard(i)
                    continue
                if closed(slow[i]):
                    open_ones.discard(i)
            time.sleep(0.3)
        elapsed = time.monotonic() - started
        assert not open_ones, f"still open after {elapsed:.1f}s: {sorted(open_ones)}"
        assert 1.5 < elapsed < 6
        assert closed(idle) or (time.sleep(1) or closed(idle))
        assert answered()  # the server still serves prompt clients
    finally:
        web.stop()


def established_per_worker(master_pid: int, port: int) -> dict[int, int]:
    """Connections to `port` each worker of the gunicorn master holds, read from /proc (Linux)."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # local port, ESTABLISHED
                established.add(fields[9])  # the socket's inode
    workers = [int(pid) for pid in Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()]
    held = {}
    for pid in workers:
        inodes = {os.readlink(fd)[len("socket:["):-1] for fd in Path(f"/proc/{pid}/fd").iterdir()
                  if os.readlink(fd).startswith("socket:[")}
        held[pid] = len(inodes & established)
    return held


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the workers' sockets from Linux's /proc")
def test_new_connections_go_to_the_worker_holding_the_fewest(tmp_path):
    """Three workers and a burst of 30 connections opened at once (as a proxy or wrk opens its pool): each worker
    takes about a third, where one waking first used to take most of a burst (config/web_balance.py); every
    connection is then answered."""
    import socket

    from tests.processes import LOOPBACK, PYTHON, Process, child_env, free_port, wait_until

    port = free_port()
    env = child_env(data_dir=tmp_path / "data", WEB_BIND=f"{LOOPBACK}:{port}", WEB_CONCURRENCY="3")
    web = Process("web", [PYTHON, "-m", "gunicorn", "config.asgi:application", "-c", "config/gunicorn.py"],
                  env=env, log_dir=tmp_path).start()
    request = b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"

    def answered(conn: socket.socket) -> bool:
        conn.sendall(request)
        return conn.recv(64).startswith(b"HTTP/1.1 200")

    def three_workers_accept() -> bool:
        """Three connections held at once land on three workers: every worker has started accepting."""
        probes = []
        try:
            probes = [socket.create_connection((LOOPBACK, port), timeout=5) for _ in range(3)]
            return all(answered(conn) for conn in probes) and sorted(
                established_per_worker(web.pid, port).values()) == [1, 1, 1]
        except OSError:
            return False
        finally:
            for conn in probes:
                conn.close()

    burst = []
    try:
        wait_until(three_workers_accept, timeout=120, what="three workers to accept", logs=[web])
        wait_until(lambda: not sum(established_per_worker(web.pid, port).values()), timeout=10,
                   what="the probes' connections to close", logs=[web])
        burst = [socket.create_connection((LOOPBACK, port), timeout=5) for _ in range(30)]
        held = wait_until(lambda: (counts := established_per_worker(web.pid, port)) and sum(counts.values()) == 30
                          and counts, timeout=10, what="the workers to accept the burst", logs=[web])
        assert max(held.values()) - min(held.values()) <= 2, held
        assert all(answered(conn) for conn in burst)
    finally:
        for conn in burst:
            conn.close()
        web.stop()
