"""Many open log streams on the production server, measured in one run on this machine.

    .venv/bin/python bench/streams.py [--streams 1000] [--lines 40] [--interval 0.1] [--workers 2]

Starts gunicorn with uvicorn workers on a scratch database (bench/harness.py: SQLite in a temporary folder, or a
scratch PostgreSQL database when DATABASE_URL points at PostgreSQL; Redis pub/sub when REDIS_URL is set),
creates a user, workspace, project and a building deployment, opens STREAMS concurrent log streams with a stream
token (raw asyncio sockets), then appends LINES lines through `log_append` (what builds call) every INTERVAL
seconds while `/health` is asked in a loop. Prints:

- line latency p50/p95: from the start of `log_append` to the line's arrival on a stream, over every stream;
- `/health` p50/p95 while the streams are open;
- what the open streams cost the server: threads per worker, Redis pub/sub subscriptions, database connections.

Bounded in time (--timeout, default 110 s); every process it started is stopped on the way out.
"""
import argparse
import asyncio
import os
import re
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, bench_arguments  # noqa: E402

EVENT = re.compile(rb"id: (\d+)\nevent: log\ndata: line (\d+)\n\n")


class Stream(asyncio.Protocol):
    """One SSE client on a raw connection: notes when each piece of the body arrived, and reads it after the run
    (a protocol's callback per read, no coroutine: the client's own work would otherwise delay what it measures)."""

    def __init__(self):
        self.chunks: list[tuple[float, bytes]] = []
        self.arrived: dict[int, float] = {}
        self.repeated = 0  # lines that arrived more than once
        self.ended = False
        self.status = 0
        self.opened = asyncio.Event()
        self.closed = asyncio.Event()
        self._head = b""
        self._tail = b""  # the end of the body so far, for `event: end` across two reads

    async def run(self, host, port, path, sem: asyncio.Semaphore):
        async with sem:
            loop = asyncio.get_running_loop()
            self.transport, _ = await loop.create_connection(lambda: self, host, port)
            self.transport.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n"
                                 .encode())
            await self.opened.wait()

    def data_received(self, data: bytes) -> None:
        if not self.opened.is_set():  # the head and the first comment: read as they come
            self._head += data
            if b"\r\n\r\n" in self._head and not self.status:
                self.status = int(self._head.split(b" ", 2)[1])
            if self.status and (self.status != 200 or b": stream open" in self._head):
                self.opened.set()
            return
        self.chunks.append((time.perf_counter(), data))
        if b"event: end" in self._tail + data:
            self.ended = True
            self.transport.close()
        self._tail = data[-16:]

    def connection_lost(self, exc) -> None:
        self.opened.set()
        self.closed.set()

    def read_lines(self) -> None:
        """Each line's arrival: the time of the read that completed its event."""
        buffer = b""
        for at, data in self.chunks:
            buffer += data
            for match in EVENT.finditer(buffer):
                if int(match[2]) in self.arrived:
                    self.repeated += 1
                self.arrived.setdefault(int(match[2]), at)
            cut = buffer.rfind(b"\n\n")
            if cut >= 0:
                buffer = buffer[cut + 2:]


def pct(values, q):
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else float("nan")


async def health_loop(host, port, stop: asyncio.Event, samples: list):
    while not stop.is_set():
        start = time.perf_counter()
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        body = await reader.read()
        writer.close()
        if body.startswith(b"HTTP/1.1 200"):
            samples.append(time.perf_counter() - start)
        await asyncio.sleep(0.05)


def worker_pids(bench) -> list[str]:
    master = next(proc for label, proc, _ in bench.procs if label == "web").pid
    try:
        return Path(f"/proc/{master}/task/{master}/children").read_text().split()
    except OSError:
        return []


def cpu_seconds(pids) -> dict[str, float]:
    """User + system CPU seconds of each process (and of this one, as "bench")."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {"bench": sum(os.times()[:2])}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            found[pid] = (int(fields[11]) + int(fields[12])) / ticks
        except OSError:
            pass
    return found


def resident_kib(pids) -> int:
    """The web workers' resident memory together, in KiB."""
    total = 0
    for pid in pids:
        try:
            total += next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def server_cost(bench, channel: str) -> str:
    """Threads of each worker, Redis subscribers of the channel, database connections."""
    workers = worker_pids(bench)
    threads = [len(os.listdir(f"/proc/{pid}/task")) for pid in workers if os.path.isdir(f"/proc/{pid}/task")]
    parts = [f"threads per worker {threads}"]
    if os.environ.get("REDIS_URL"):
        import redis

        subs = dict(redis.Redis.from_url(os.environ["REDIS_URL"]).pubsub_numsub(channel))[channel.encode()]
        parts.append(f"Redis subscriptions to the channel {subs}")
    if bench.scratch_db:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            parts.append(f"PostgreSQL connections to the scratch database {cursor.fetchone()[0]} (this one included)")
    return "; ".join(parts)


def setup():
    from platform_app.models import Deployment, Membership, Project, User, Workspace
    from platform_app.services.identity.auth import session_start
    from platform_app.services.identity.stream_tokens import Credential, stream_token_issue

    user = User.objects.create_user(email="bench@example.com", password="bench-password-1")
    workspace = Workspace.objects.create(name="Bench", slug="bench")
    Membership.objects.create(workspace=workspace, user=user, role="owner")
    project = Project.objects.create(workspace=workspace, name="Site", slug="site",
                                     git_url="https://git.example.com/site.git")
    deployment = Deployment.objects.create(project=project, env="preview", branch="main", status="building")
    # a stream token depends on a live credential: a sign-in session of the bench user
    session = session_start(user=user).session
    token, _ = stream_token_issue(user=user, scopes={"read"}, ttl_seconds=600,
                                  credential=Credential(user_id=user.pk, session_id=session.pk))
    return deployment, token


async def measure(bench, args, deployment, token):
    from django.db import connection

    from platform_app.models import Deployment
    from platform_app.services.deployments.deployments import log_append, log_channel

    host, port = urlsplit(bench.url).hostname, urlsplit(bench.url).port
    path = f"/v1/orgs/bench/deployments/{deployment.pk}/logs/stream?token={token}"
    streams = [Stream() for _ in range(args.streams)]
    sem = asyncio.Semaphore(100)  # connects in flight at once
    start = time.perf_counter()
    memory_before = resident_kib(worker_pids(bench))
    await asyncio.wait_for(asyncio.gather(*(s.run(host, port, path, sem) for s in streams)), 120)
    bad = sum(1 for s in streams if s.status != 200)
    print(f"{args.streams} streams open in {time.perf_counter() - start:.1f} s ({bad} not 200)", flush=True)
    memory_open = resident_kib(worker_pids(bench))
    print(f"web workers' memory: {memory_before / 1024:.0f} MiB before, {memory_open / 1024:.0f} MiB with the streams "
          f"open: {(memory_open - memory_before) / max(args.streams, 1):.1f} KiB per open stream", flush=True)

    sent: dict[int, float] = {}
    stop, health = asyncio.Event(), []
    prober = asyncio.create_task(health_loop(host, port, stop, health))

    def writer():
        try:
            for n in range(1, args.lines + 1):
                sent[n] = time.perf_counter()
                log_append(deployment, f"line {n}")
                time.sleep(args.interval)
        finally:
            connection.close()

    cpu_before, wall_before = cpu_seconds(worker_pids(bench)), time.perf_counter()
    thread = threading.Thread(target=writer)
    thread.start()
    await asyncio.sleep(args.lines * args.interval / 2)
    cost = await asyncio.to_thread(server_cost, bench, log_channel(deployment.pk))
    while thread.is_alive():
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # the last lines travel
    cpu_after, wall = cpu_seconds(worker_pids(bench)), time.perf_counter() - wall_before
    busy = {k: (cpu_after[k] - cpu_before[k]) / wall * 100 for k in cpu_after if k in cpu_before}
    stop.set()
    await prober

    def finish():
        Deployment.objects.filter(pk=deployment.pk).update(status="ready")
        connection.close()

    await asyncio.to_thread(finish)
    await asyncio.wait([asyncio.ensure_future(s.closed.wait()) for s in streams], timeout=20)
    for stream in streams:
        stream.transport.close()
        stream.read_lines()

    latencies = [s.arrived[n] - sent[n] for s in streams for n in s.arrived if n in sent]
    complete = sum(1 for s in streams if set(s.arrived) == set(sent) and not s.repeated)
    print(f"lines appended: {args.lines} every {args.interval * 1000:.0f} ms; streams that got every line exactly "
          f"once: {complete}/{args.streams}; ended with `end`: {sum(s.ended for s in streams)}")
    print(f"line latency (log_append → stream): p50 {pct(latencies, 50):.1f} ms, p95 {pct(latencies, 95):.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms over {len(latencies)} deliveries")
    print(f"/health while {args.streams} streams are open: p50 {pct(health, 50):.1f} ms, "
          f"p95 {pct(health, 95):.1f} ms over {len(health)} requests")
    print(f"server while streaming: {cost}")
    server_cpu = sum(cpu_after[k] - cpu_before[k] for k in busy if k != "bench")
    print("CPU while appending (% of one core): " + ", ".join(
        f"{'bench client' if k == 'bench' else f'worker {k}'} {v:.0f}%" for k, v in busy.items())
        + f"; server CPU per delivered line {server_cpu / max(len(latencies), 1) * 1e6:.0f} µs")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (other work on it inflates "
          f"latencies)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench_arguments(parser)
    parser.set_defaults(timeout=110)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between two appended lines")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.streams * 2 + 256  # our sockets; the server's children inherit the limit too
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    # every stream is the one bench user's: lift their bound per process (EVENT_STREAMS_PER_USER) above the run's
    with Bench("streams", args, env={"EVENT_STREAMS_PER_USER": str(args.streams)}) as bench:
        deployment, token = setup()
        bench.serve(workers=args.workers)
        print(f"log follow: {'Redis pub/sub (one connection per worker)' if os.environ.get('REDIS_URL') else 'polling'}",
              flush=True)
        asyncio.run(measure(bench, args, deployment, token))


if __name__ == "__main__":
    main()
