"""Gunicorn settings for the web process: `gunicorn config.asgi:application -c config/gunicorn.py`.

Gunicorn supervises the workers (restarts one that dies or hangs); each worker is uvicorn running the ASGI
application, so open log streams wait on the event loop instead of holding threads. docs/deployment.md has the
whole picture; every value below can be set from the environment.
"""
import ctypes
import logging
import os

from gunicorn.glogging import Logger

from config.log_redaction import RedactSecrets
from config.web_balance import ConnectionCounts

bind = [os.environ.get("WEB_BIND") or f"0.0.0.0:{os.environ.get('WEB_PORT', '8000')}"]
# One worker more than cores: a worker's threads wait on database round trips and on each other for the
# interpreter lock, so one process per core leaves CPU idle under load (docs/performance.md, "The server").
workers = int(os.environ.get("WEB_CONCURRENCY") or (os.cpu_count() or 1) + 1)
# uvicorn_worker's worker whose connections must send each request head within WEB_HEADER_TIMEOUT seconds
# (config/web_protocol.py): uvicorn itself only times out idle kept-alive connections.
worker_class = "config.web_protocol.UvicornWorker"
backlog = int(os.environ.get("WEB_BACKLOG", "2048"))  # connections waiting for accept() during bursts
# A worker that stops answering its heartbeat for this long is killed and replaced. Uvicorn beats from the
# event loop, so a long-lived stream never counts as silence.
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
# On stop or reload: seconds a worker gets to finish its requests. Streams still open then are cut; their
# clients reconnect with Last-Event-ID and miss nothing.
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "20"))
# Idle seconds a kept-alive connection stays open (uvicorn_worker hands it to uvicorn as timeout_keep_alive).
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))
# Proxies whose X-Forwarded-For / X-Forwarded-Proto uvicorn believes (it then rewrites the client address the
# application and the access log see). None unless TRUSTED_PROXY_COUNT says proxies stand in front, as Django's
# client_ip() (config/client_ip.py) decides: otherwise any process on the host (127.0.0.1 was trusted by default)
# could name itself any address and get a fresh rate-limit budget per request. Behind proxies, list their
# addresses (comma-separated, CIDR allowed) in FORWARDED_ALLOW_IPS; never `*` on a server clients reach directly.
trusted_proxy_count = int(os.environ.get("TRUSTED_PROXY_COUNT") or 0)
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "") if trusted_proxy_count > 0 else ""
# Recycle each worker after about this many requests (0: never), jittered so they do not restart together.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "0"))
max_requests_jitter = max(max_requests // 10, 0)
# glibc's malloc gives each new thread an arena of its own, up to eight per core, and memory freed in one arena
# is not reused by another: after the warehouse bench a worker held 11-13. Sharing two, the workers ended it 3-4 MiB
# lower; threads wait for the interpreter lock anyway, so throughput did not move (docs/performance.md, "The server").
malloc_arenas = int(os.environ.get("WEB_MALLOC_ARENAS", "2"))  # 0: glibc's default

accesslog = "-"  # stdout
errorlog = "-"
loglevel = os.environ.get("WEB_LOG_LEVEL", "info")


class CompactLogger(Logger):
    """Access lines as `time [pid] client - "METHOD /path HTTP/1.1" status` (uvicorn writes the message;
    gunicorn's `access_log_format` does not apply to uvicorn workers). uvicorn_worker hands these handlers to the
    `uvicorn.access` and `uvicorn.error` loggers, so the filter below sees every line: query-string tokens and
    secret path segments (deploy hooks, invitations) are written as `[redacted]` (config/log_redaction.py)."""

    access_fmt = "%(asctime)s [%(process)d] %(message)s"
    datefmt = "%Y-%m-%dT%H:%M:%S%z"

    def setup(self, cfg):
        super().setup(cfg)
        for handler in self.access_log.handlers:
            handler.setFormatter(logging.Formatter(self.access_fmt, self.datefmt))
        for handler in (*self.access_log.handlers, *self.error_log.handlers):
            handler.addFilter(RedactSecrets())


logger_class = CompactLogger


# Each worker's open connections, so a new one goes to the worker holding the fewest (config/web_balance.py).
connection_counts = ConnectionCounts()


def pre_fork(server, worker):
    """In the master, before the fork: a slot of `connection_counts` no live worker holds."""
    taken = {getattr(other, "connection_slot", None) for other in server.WORKERS.values()}
    worker.connection_counts, worker.connection_slot = connection_counts, connection_counts.claim(taken)


def child_exit(server, worker):
    """In the master, once a worker has exited: its slot is free again, and its count no longer weighs."""
    connection_counts.free(getattr(worker, "connection_slot", None))


def post_fork(server, worker):
    """Before the worker starts any thread: cap glibc's malloc arenas (`malloc_arenas` above). Where malloc is not
    glibc's there is no such setting, and nothing to do."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None and malloc_arenas > 0:
        M_ARENA_MAX = -8
        mallopt(M_ARENA_MAX, malloc_arenas)


def post_worker_init(worker):
    # The application is loaded: keep its objects (about 40% of a worker's) out of the collector's full passes,
    # which pause every open stream of the worker while they run.
    import gc

    gc.freeze()
    # Young collections every 5,000 allocations, not 700: a stream's wait (a future, its callbacks) lives a tenth of a
    # second, and at 700 it outlived two collections coming every few milliseconds and reached the oldest
    # generation, whose full passes then came every few seconds and took up to one (bench/streams.py at 10,000
    # streams: 71 full passes in 80 s, a line's p95 1.7 s). Nor 50,000: each young pass then stopped every thread
    # of the worker for 25-300 ms, the p99 of an API answer (130-170 ms against 33 at 5,000), while the streams'
    # p95 was the same at both (475 and 462 ms). docs/performance.md, "The tail of a quick answer".
    gc.set_threshold(5_000, 20, 100)
