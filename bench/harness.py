"""Benchmarks through the production server, next to two baselines measured by the same server in the same run.

    import argparse
    from bench.harness import Bench, bench_arguments

    parser = argparse.ArgumentParser()
    bench_arguments(parser)                       # --runs/--once, --duration, --connections, --threads, --timeout
    args = parser.parse_args()
    with Bench("mybench", args) as bench:          # scratch database created and migrated, Django set up here
        ...                                        # build data with the ORM in this process
        bench.serve()                              # gunicorn + uvicorn workers (and the Celery workers if celery=True)
        bench.report("regions", bench.wrk("/api/regions"))
    # on the way out, normally or not: every process it started is stopped and the scratch database dropped

The database is a scratch PostgreSQL database next to the one DATABASE_URL names (created, migrated, dropped)
when DATABASE_URL points at PostgreSQL, else SQLite in a temporary DATA_DIR. The server runs the production
settings (DEBUG off) with BENCH_VIEWS on, which routes the baselines of config/bench_views.py: `/bench/plain`
(JSON, no database) and `/bench/db` (one indexed read and one insert). Load comes from wrk (`apt-get install
wrk`) at 16 connections on 2 threads; each figure is the median of N runs (req/s, p50, p95 from wrk's latency
histogram). Requests that vary (paths, bodies, headers) go through `lua_requests`.

Under each figure, on Linux, a second line says where the CPU went during the runs, in ms per request (median
of the runs): each process this harness started with its children (`web`, and `worker`/`codes` with Celery),
PostgreSQL and Redis when they run on this machine, and the whole machine's busy time (wrk and the kernel
included) with its idle share. A rate the machine's CPU caps is 2 cores divided by that `machine` figure.
"""
from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
PROC = Path("/proc/stat").exists()  # CPU accounting per process group where the machine tells it (Linux)
VENV = ROOT / ".venv" / "bin"
BASELINES = {"plain": ("/bench/plain", "baseline: JSON, no database"),
             "db": ("/bench/db", "baseline: 1 indexed read + 1 insert")}
# appended to every wrk script: one parseable line with what the median needs
DONE_LUA = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("BENCH-FIGURES %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(95), e.status, e.connect + e.read + e.write + e.timeout))
end
"""


class BenchTimeout(Exception):
    pass


def bench_arguments(parser) -> None:
    parser.add_argument("--runs", type=int, default=3, help="wrk runs per figure, the median is printed (default 3)")
    parser.add_argument("--once", dest="runs", action="store_const", const=1, help="one run per figure")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, help="web worker processes (default: the server's, config/gunicorn.py)")
    parser.add_argument("--timeout", type=int, default=900, help="the whole bench stops after this many seconds")


@dataclass
class Figures:
    rps: float
    p50_ms: float
    p95_ms: float
    requests: int = 0
    non_2xx: int = 0
    socket_errors: int = 0
    runs: list = field(default_factory=list)
    cpu_ms: dict = field(default_factory=dict)  # CPU ms per request by process group, and "machine"

    @classmethod
    def median(cls, runs: list[Figures]) -> Figures:
        cpu = {group: statistics.median(r.cpu_ms.get(group, 0) for r in runs) for group in runs[0].cpu_ms}
        return cls(statistics.median(r.rps for r in runs), statistics.median(r.p50_ms for r in runs),
                   statistics.median(r.p95_ms for r in runs), sum(r.requests for r in runs),
                   sum(r.non_2xx for r in runs), sum(r.socket_errors for r in runs), runs, cpu)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SERVICES = {"postgres": "postgres", "redis-server": "redis"}  # process name -> group, on this machine


def machine_cpu() -> tuple[float, float]:
    """Seconds of CPU (all cores) the machine has spent so far, busy and in all (Linux)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / CLOCK_TICKS, sum(ticks) / CLOCK_TICKS


def process_cpu(groups: dict[int, str]) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of each process in `groups` (process group id -> name: the processes the
    harness started, each with its children) or named in SERVICES; pid -> (group, seconds). Linux."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        group = groups.get(int(fields[2])) or SERVICES.get(name)
        if group:
            found[int(entry.name)] = (group, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return found


def cpu_snapshot(groups: dict[int, str]):
    """What cpu_per_request compares: the processes' and the machine's CPU so far; None where /proc is missing."""
    return (process_cpu(groups), machine_cpu()) if PROC else None


def cpu_per_request(before, after, requests: int) -> dict[str, float]:
    """Where the CPU went between two snapshots, in ms per request: each group, "machine" (everything busy,
    wrk and the kernel included) and "idle" (percent of the machine's time); empty without /proc."""
    if before is None or after is None:
        return {}
    (processes_before, machine_before), (processes_after, machine_after) = before, after
    spent: dict[str, float] = {}
    for pid, (group, seconds) in processes_after.items():
        spent[group] = spent.get(group, 0) + seconds - processes_before.get(pid, (group, 0))[1]
    busy, total = machine_after[0] - machine_before[0], machine_after[1] - machine_before[1]
    per_request = {group: 1000 * seconds / max(requests, 1) for group, seconds in sorted(spent.items())}
    per_request["machine"] = 1000 * busy / max(requests, 1)
    per_request["idle"] = 100 * (1 - busy / total) if total else 0
    return per_request


def lua_string(text: str) -> str:
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def lua_requests(requests: list[dict]) -> str:
    """A wrk script cycling through requests, each `{"path", "method"?, "body"?, "headers"?: {...}}`."""
    items = []
    for r in requests:
        # the spaces keep `[ [[key]] ]` from reading as the start of a long string
        headers = ", ".join(f"[ {lua_string(k)} ] = {lua_string(v)}" for k, v in (r.get("headers") or {}).items())
        body = lua_string(r["body"]) if r.get("body") is not None else "nil"
        items.append(f'  {{{lua_string(r.get("method", "GET"))}, {lua_string(r["path"])}, {{{headers}}}, {body}}}')
    return ("local reqs = {\n" + ",\n".join(items) + "\n}\nlocal i = 0\n"
            "request = function()\n  i = i % #reqs + 1\n  local r = reqs[i]\n"
            "  return wrk.format(r[1], r[2], r[3], r[4])\nend\n")


def procfile_command(label: str) -> list[str]:
    """A process's command as the Procfile gives it, so a bench runs it as `make run` does."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == label:
            return [str(ROOT / part) if part.startswith(".venv/") else part for part in shlex.split(command)]
    raise LookupError(f"no {label!r} in the Procfile")


@contextmanager
def deployments_churning(project, every_ms: int):
    """Meanwhile, a deployment of `project` is created and made ready every `every_ms` through the service that ends
    a build (`deployment_finish_ready`), on a schedule; printed afterwards: how many, and how many a second."""
    from django.db import close_old_connections

    from platform_app.models import Deployment
    from platform_app.services.deployments.builds import deployment_finish_ready

    stop, made = threading.Event(), []

    def churn():
        due = time.monotonic()
        try:
            while not stop.wait(max(0.0, (due := due + every_ms / 1000) - time.monotonic())):
                deployment = Deployment.objects.create(project=project, env="production", branch="main",
                                                       status="building")
                deployment_finish_ready(deployment, framework="static", snapshot={})
                made.append(deployment.pk)
        finally:
            close_old_connections()

    churner = threading.Thread(target=churn, daemon=True)
    started = time.monotonic()
    churner.start()
    try:
        yield
    finally:
        stop.set()
        churner.join(30)
        seconds = time.monotonic() - started
        print(f"  {len(made)} deployments became ready in {seconds:.0f} s ({len(made) / seconds:.1f}/s)", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bench:
    def __init__(self, name: str, args, *, celery: bool = False, env: dict | None = None):
        self.name, self.args, self.celery, self.extra_env = name, args, celery, env or {}
        self.procs: list[tuple[str, subprocess.Popen, Path]] = []
        self.url = ""
        self.scratch_db = None  # (admin url, database name)
        self.data_dir: Path | None = None
        self._baselines: dict[str, Figures] = {}

    # ---- lifecycle
    def __enter__(self) -> Bench:
        if shutil.which("wrk") is None:
            raise SystemExit("wrk is missing: apt-get update && apt-get install -y wrk")
        signal.signal(signal.SIGALRM, self._alarm)
        signal.signal(signal.SIGTERM, self._alarm)
        signal.alarm(self.args.timeout)
        self.started = time.monotonic()
        try:
            self._environment()
            import django
            from django.core.management import call_command

            django.setup()
            # what a release runs before its web processes start (docs/deployment.md): pages need the manifest
            call_command("migrate", verbosity=0)
            call_command("collectstatic", interactive=False, verbosity=0)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc) -> None:
        signal.alarm(0)
        for label, proc, log in reversed(self.procs):
            self._stop(proc)
        self.procs.clear()
        try:
            from django.db import connections

            for conn in connections.all(initialized_only=True):
                conn.close()
                if hasattr(conn, "close_pool"):
                    conn.close_pool()
        except Exception:  # Django may not be set up yet
            pass
        if self.scratch_db:
            import psycopg

            admin_url, name = self.scratch_db
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        print(f"done in {time.monotonic() - self.started:.0f} s; processes stopped, scratch "
              f"{'database dropped' if self.scratch_db else 'data removed'}")

    def _alarm(self, signum, frame):
        raise BenchTimeout(f"stopped after {self.args.timeout} s" if signum == signal.SIGALRM else "terminated")

    def _environment(self) -> None:
        """Production settings on a scratch database; the same variables for this process and the server."""
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"bench-{self.name}-"))
        env = {"DATA_DIR": str(self.data_dir), "DJANGO_SETTINGS_MODULE": "config.settings.production",
               "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
               "DJANGO_SECURE_SSL_REDIRECT": "false", "BENCH_VIEWS": "true", **self.extra_env}
        url = os.environ.get("DATABASE_URL", "")
        if url.startswith(("postgres://", "postgresql://")):
            import psycopg

            parts = urlsplit(url)
            name = f"{parts.path.lstrip('/') or 'postgres'}_bench_{self.name}_{os.getpid()}"[:63]
            admin_url = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            self.scratch_db = (admin_url, name)
            env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
        else:
            os.environ.pop("DATABASE_URL", None)
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))

    @property
    def database(self) -> str:
        return f"PostgreSQL (scratch database {self.scratch_db[1]})" if self.scratch_db else "SQLite (scratch file)"

    # ---- processes
    def _start(self, label: str, cmd: list[str], ready) -> subprocess.Popen:
        log = self.data_dir / f"{label}.log"
        proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ.copy(), stdout=open(log, "wb"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((label, proc, log))
        deadline = time.monotonic() + 60
        while not ready(log):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{label} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        return proc

    @staticmethod
    def _stop(proc: subprocess.Popen) -> None:
        """The process group this harness started (gunicorn and its workers, or the Celery worker)."""
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass

    def serve(self, *, workers: int | None = None) -> str:
        """Start the production server on a free loopback port (and the Celery workers when asked, as the
        Procfile runs them: `worker` for the default queue, `codes` for code deliveries)."""
        if self.celery:
            for label in ("worker", "codes"):
                self._start(label, procfile_command(label), lambda log: b" ready." in log.read_bytes())
        workers = workers or self.args.workers
        port = free_port()
        cmd = [str(VENV / "gunicorn"), "config.asgi:application", "--bind", f"127.0.0.1:{port}"]
        cmd += ["--workers", str(workers)] if workers else []
        # the Procfile's settings and worker class; a tree from before config/gunicorn.py gets uvicorn's worker
        cmd += ["-c", "config/gunicorn.py"] if (ROOT / "config" / "gunicorn.py").exists() else [
            "-k", "uvicorn_worker.UvicornWorker"]
        self.url = f"http://127.0.0.1:{port}"

        def answering(_log) -> bool:
            try:
                return urllib.request.urlopen(f"{self.url}/bench/plain", timeout=2).status == 200
            except OSError:
                return False

        self._start("web", cmd, answering)
        load = f"wrk -t{self.args.threads} -c{self.args.connections} -d{self.args.duration}s"
        print(f"server: gunicorn, {len(self.worker_memory())} uvicorn workers, {self.url}; "
              f"database: {self.database}; {load}, median of {self.args.runs} run(s)")
        return self.url

    def worker_memory(self) -> list[str]:
        """Resident memory and threads of each web worker (the gunicorn master's children): a worker keeps a thread
        and a database connection for each request it served at once (config/asgi.py)."""
        web = next(proc for label, proc, _ in self.procs if label == "web")
        out = subprocess.run(["ps", "-o", "pid=,rss=,nlwp=", "--ppid", str(web.pid)], capture_output=True,
                             text=True).stdout
        return [f"pid {pid} {int(rss) / 1024:.0f} MiB ({threads} threads)"
                for pid, rss, threads in (line.split() for line in out.splitlines())]

    # ---- load
    def wrk(self, path: str = "/", *, script: str = "", runs: int | None = None, warmup: int = 2,
            url: str | None = None) -> Figures:
        """Median figures of `runs` wrk runs against one path (or the requests of a `lua_requests` script), on this
        bench's server or the one at `url`."""
        script_path = self.data_dir / f"wrk-{secrets.token_hex(4)}.lua"
        script_path.write_text(script + DONE_LUA)
        results = []
        for i in range(-1 if warmup else 0, runs or self.args.runs):
            duration = warmup if i < 0 else self.args.duration
            cmd = ["wrk", f"-t{self.args.threads}", f"-c{self.args.connections}", f"-d{duration}s", "--latency",
                   "--timeout", "5s", "-s", str(script_path), (url or self.url) + path]
            groups = {proc.pid: label for label, proc, _ in self.procs}
            before = cpu_snapshot(groups)
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60, check=True).stdout
            after = cpu_snapshot(groups)
            line = next((ln for ln in out.splitlines() if ln.startswith("BENCH-FIGURES")), None)
            if line is None:
                raise RuntimeError(f"wrk gave no figures:\n{out}")
            requests, micros, p50, p95, status, sockets = map(int, line.split()[1:])
            if i >= 0:
                results.append(Figures(requests / (micros / 1e6), p50 / 1000, p95 / 1000, requests, status, sockets,
                                       cpu_ms=cpu_per_request(before, after, requests)))
        return Figures.median(results)

    def baselines(self) -> dict[str, Figures]:
        if not self._baselines:
            for key, (path, label) in BASELINES.items():
                self._baselines[key] = self.wrk(path)
                self.report(label, self._baselines[key], baseline=None)
        return self._baselines

    def paired(self, label: str, path: str = "/", *, script: str = "", baseline: str | tuple[str, str] = "db",
               url: str | None = None, settle=lambda: None) -> Figures:
        """The target and a baseline in alternation, one run of each per pair, and the median of the pairs' ratios.
        The machine's speed drifts over minutes (a shared host): a pair shares its moment, a baseline measured
        minutes earlier does not. `baseline` is a name of BASELINES or a bench's own (path, label), whose line is
        printed first; `url` puts the target on another server; `settle()` runs before each run: work the target
        left behind (jobs on a worker) must not share the machine with the next one."""
        own = not isinstance(baseline, str)
        base_path, base_label = baseline if own else BASELINES[baseline]
        pairs = []
        for i in range(self.args.runs):
            warmup = 2 if i == 0 else 0
            settle()
            base = self.wrk(base_path, runs=1, warmup=warmup)
            settle()
            pairs.append((base, self.wrk(path, script=script, runs=1, warmup=warmup, url=url)))
        figures, base = Figures.median([target for _, target in pairs]), Figures.median([base for base, _ in pairs])
        if own:
            self.report(base_label, base, baseline=None)
        self.report(label, figures, baseline=base_path if own else baseline, base=base,
                    ratios=sorted(target.rps / base.rps for base, target in pairs))
        return figures

    def report(self, label: str, figures: Figures, *, baseline: str | None = "db", base: Figures | None = None,
               ratios: list[float] | None = None) -> None:
        """One line: req/s, p50, p95, and the ratios to a baseline ("db", "plain" or None, named so in the line): to
        `base` and the median of the pairs' `ratios` when paired, else to the baseline measured at the start."""
        text = f"{label:<44} {figures.rps:8.1f} req/s  p50 {figures.p50_ms:7.1f} ms  p95 {figures.p95_ms:7.1f} ms"
        if baseline:
            base = base or self.baselines()[baseline]
            ratio = statistics.median(ratios) if ratios else figures.rps / base.rps
            paired = f" (median of {len(ratios)} pairs, {ratios[0]:.2f}-{ratios[-1]:.2f})" if ratios else ""
            text += (f"  | {baseline} baseline {base.rps:7.1f} req/s, p95 {base.p95_ms:5.1f} ms: "
                     f"{ratio:5.2f}x req/s{paired}, {figures.p95_ms / max(base.p95_ms, 0.001):5.2f}x p95")
        if figures.non_2xx or figures.socket_errors:
            text += f"  !! {figures.non_2xx} non-2xx, {figures.socket_errors} socket errors"
            if figures.non_2xx > figures.requests / 100:  # a figure of refusals says nothing of the work measured
                text += " -- NOT A VALID FIGURE: more than 1 % of the answers were errors"
        if figures.cpu_ms:
            cpu = dict(figures.cpu_ms)
            machine, idle = cpu.pop("machine"), cpu.pop("idle")
            groups = ", ".join(f"{group} {ms:.2f}" for group, ms in cpu.items() if ms >= 0.005)
            groups += "; " if groups else ""  # none for a server this bench did not start
            text += f"\n    CPU per request: {groups}machine {machine:.2f} ms (idle {idle:.0f} %)"
        print(text, flush=True)
