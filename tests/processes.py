"""Real processes for the slow suites: the production web server, a Celery worker and beat, a dedicated
redis-server, a TCP proxy that can be cut, and `manage.py` runs (a scratch database: tests/scratch_database.py).

Every process runs in a process group of its own (so a stop or a kill reaches its children too), writes its
output to a log file (`.log_tail()` for failure messages) and is stopped by whoever started it. Ports come from
`free_port()` on 127.0.0.1; nothing binds another address.
"""
import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
LOOPBACK = "127.0.0.1"
# Variables of the outer environment that must not leak into a child (each child gets its own).
_PRIVATE = ("DATABASE_URL", "REDIS_URL", "DATA_DIR", "DJANGO_SETTINGS_MODULE", "CELERY_TASK_ALWAYS_EAGER",
            "WEB_BIND", "WEB_PORT", "WEB_CONCURRENCY")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def process_alive(pid: int) -> bool:
    """Whether a process of this machine runs with that id (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def port_open(port: int, host: str = LOOPBACK) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def wait_until(predicate, *, timeout: float, interval: float = 0.2, what: str = "the condition", logs=()):
    """Poll `predicate` until it returns something truthy (returned) or `timeout` seconds pass (TimeoutError
    naming `what`, with the tails of `logs`: processes whose output explains the failure)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name} ---\n{p.log_tail()}" for p in logs)
            raise TimeoutError(f"Gave up waiting for {what} after {timeout:g}s.\n{tails}")
        time.sleep(interval)


def child_env(*, data_dir: Path, database_url: str | None = None, redis_url: str | None = None,
              settings: str = "config.settings.local", **extra) -> dict:
    """The environment of a child process: this one's, minus the project's own variables, plus these."""
    env = {k: v for k, v in os.environ.items() if k not in _PRIVATE}
    env.update(DJANGO_SETTINGS_MODULE=settings, DJANGO_DEBUG="false", DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1")
    if database_url:
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update({k: str(v) for k, v in extra.items()})
    return env


def manage(env: dict, *args: str, timeout: float = 600) -> str:
    """Run `manage.py <args>`; its output, or CalledProcessError with the output."""
    done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode:
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return done.stdout


def django_script(env: dict, code: str, timeout: float = 300):
    """Run `code` in `manage.py shell`; it must print one JSON document as its last line, which is returned."""
    out = manage(env, "shell", "--no-imports", "-c", code, timeout=timeout)
    return json.loads(out.strip().splitlines()[-1])


class Process:
    """A child in its own process group, output in `<log_dir>/<name>.log`."""

    def __init__(self, name: str, argv: list, *, env: dict, log_dir: Path, cwd: Path = ROOT):
        self.name, self.argv, self.env, self.cwd = name, [str(a) for a in argv], env, cwd
        self.log_path = Path(log_dir) / f"{name}.log"
        self.popen = None

    def start(self):
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== start {time.strftime('%H:%M:%S')}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.popen = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _signal_group(self, sig) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL to the whole group: the process and every child it started die at once, as in a crash."""
        if self.popen is None:
            return
        self._signal_group(signal.SIGKILL)
        self.popen.wait(timeout=30)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM to the group, then SIGKILL to whatever is left of it."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)  # stragglers of the group (pool children, build steps)
        self.popen.wait(timeout=30)

    def wait_for_log(self, text: str, *, timeout: float = 120, after: int = 0) -> None:
        """Wait until `text` appears in the log past byte offset `after` (the process must stay alive)."""
        def seen():
            if not self.alive:
                raise RuntimeError(f"{self.name} exited ({self.popen.returncode}):\n{self.log_tail()}")
            return text in self.log_text()[after:]

        wait_until(seen, timeout=timeout, what=f"{text!r} in the log of {self.name}", logs=[self])


class WebServer(Process):
    """The production server: gunicorn with one uvicorn worker serving config.asgi."""

    def __init__(self, *, env: dict, log_dir: Path, port: int | None = None, name: str = "web"):
        self.port = port or free_port()
        super().__init__(name, [BIN / "gunicorn", "config.asgi:application", "-k", "uvicorn_worker.UvicornWorker",
                                "--workers", "1", "--bind", f"{LOOPBACK}:{self.port}", "--graceful-timeout", "5",
                                "--no-control-socket"],
                         env=env, log_dir=log_dir)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 120):
        wait_until(lambda: not port_open(self.port), timeout=30, what=f"port {self.port} to be free")
        super().start()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 120) -> None:
        """Until /health answers at all (200, or 503 when the database is what is being broken)."""
        import httpx

        def answers():
            if not self.alive:
                raise RuntimeError(f"{self.name} exited ({self.popen.returncode}):\n{self.log_tail()}")
            try:
                return httpx.get(self.url + "/health", timeout=5).status_code in (200, 503)
            except httpx.HTTPError:
                return False

        wait_until(answers, timeout=timeout, interval=0.3, what=f"{self.name} to answer /health", logs=[self])


def start_worker(*, env: dict, log_dir: Path, name: str = "worker", timeout: float = 120) -> Process:
    """`celery worker --concurrency=1`, returned once it consumes."""
    process = Process(name, [BIN / "celery", "-A", "config", "worker", "--loglevel=INFO", "--concurrency=1",
                             "-n", f"{name}-{secrets.token_hex(3)}@%h", "--without-mingle", "--without-gossip"],
                      env=env, log_dir=log_dir).start()
    process.wait_for_log(" ready.", timeout=timeout)
    return process


def start_node(*, server: str, join: str, data_dir: Path, log_dir: Path, name: str = "node", build: int = 0,
               run: bool = True, timeout: float = 60, **environment) -> Process:
    """`python -m platform_app.nodes`, as on a machine of its own: started from its own folder, with no variable
    of the platform's (only PATH, HOME, LANG, where to find the code, and `environment`); returned once joined."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(data_dir), "LANG": "C.UTF-8",
           "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **{k: str(v) for k, v in environment.items()}}
    argv = [PYTHON, "-m", "platform_app.nodes", "--server", server, "--join", join, "--name", name,
            "--data-dir", data_dir, "--build", build, "--claim-wait", 2] + ([] if run else ["--no-run"])
    process = Process(name, argv, env=env, log_dir=log_dir, cwd=data_dir).start()
    process.wait_for_log(" joined ", timeout=timeout)
    return process


def start_beat(*, env: dict, log_dir: Path, name: str = "beat", timeout: float = 120) -> Process:
    schedule = Path(log_dir) / f"{name}-schedule"
    process = Process(name, [BIN / "celery", "-A", "config", "beat", "--loglevel=INFO", f"--schedule={schedule}"],
                      env=env, log_dir=log_dir).start()
    process.wait_for_log("beat: Starting", timeout=timeout)
    return process


def redis_server_path() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    """A redis-server of our own on a fixed port: no persistence, so a restart starts empty, as after a crash."""

    def __init__(self, *, log_dir: Path, port: int | None = None):
        self.port = port or free_port()
        self.log_dir = Path(log_dir)
        self.process = None

    def url(self, db: int = 0) -> str:
        return f"redis://{LOOPBACK}:{self.port}/{db}"

    def start(self, timeout: float = 30):
        wait_until(lambda: not port_open(self.port), timeout=30, what=f"port {self.port} to be free")
        self.process = Process(f"redis-{self.port}", [redis_server_path(), "--port", self.port, "--bind", LOOPBACK,
                                                       "--save", "", "--appendonly", "no", "--dir", self.log_dir],
                               env=dict(os.environ), log_dir=self.log_dir).start()
        wait_until(self.ping, timeout=timeout, what=f"redis-server on {self.port}", logs=[self.process])
        return self

    def ping(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, self.port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


class TcpProxy:
    """Forwards 127.0.0.1:<port> to an upstream address, one thread pair per connection. `stop()` closes the
    listening socket and cuts every connection (the server behind looks gone); `start()` listens again on the
    same port."""

    def __init__(self, upstream_host: str, upstream_port: int, *, port: int | None = None):
        self.upstream = (upstream_host, upstream_port)
        self.port = port or free_port()
        self._listener = None
        self._sockets: set = set()
        self._lock = threading.Lock()
        self._running = False
        self._threads: list = []

    def start(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, self.port))
        listener.listen(64)
        listener.settimeout(0.2)
        self._listener, self._running = listener, True
        self._spawn(self._accept_loop)
        return self

    def stop(self) -> None:
        self._running = False
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._sockets = list(self._sockets), set()
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        listener = self._listener
        while self._running:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if not self._running:
                    client.close(), upstream.close()
                    return
                self._sockets |= {client, upstream}
            self._spawn(self._pump, client, upstream)

    def _pump(self, a, b) -> None:
        pair = {a: b, b: a}
        try:
            while self._running:
                readable, _, _ = select.select([a, b], [], [], 0.2)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    pair[source].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                self._sockets -= {a, b}
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()
