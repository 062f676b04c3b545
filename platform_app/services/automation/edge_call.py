"""A request to a project's address served in this process, through the whole middleware stack exactly as a
request from outside would be (request guard, the edge, preview protection, the agent proxy, edge metrics).

Cron runs use it: the worker needs no route back to the public address and no TLS, and the app sees the call
as the edge delivers it. No `request_started`/`request_finished` signals are sent, so the caller's database
connection is left alone."""
import io
import time
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIRequest

HEAD_BYTES = 1024


@dataclass
class EdgeAnswer:
    status_code: int
    head: str          # the first KiB of the body, as text
    duration_ms: int


def _release(response) -> None:
    """Close what the response holds (an open file) without `response.close()`: that also sends
    `request_finished`, whose `close_old_connections` would close the worker's database connection (inside a
    transaction, the caller's)."""
    for closer in getattr(response, "_resource_closers", ()):
        closer()
    if hasattr(response, "_resource_closers"):
        response._resource_closers.clear()


@lru_cache(maxsize=1)
def _handler() -> BaseHandler:
    handler = BaseHandler()
    handler.load_middleware()
    return handler


def edge_get(*, host: str, path: str, headers: dict[str, str]) -> EdgeAnswer:
    """GET `path` (with its query) on `host` (`<project>.<DEPLOY_DOMAIN>`, maybe with a port)."""
    parts = urlsplit(path)
    name, _, port = host.partition(":")
    environ = {
        "REQUEST_METHOD": "GET", "PATH_INFO": parts.path or "/", "QUERY_STRING": parts.query, "SCRIPT_NAME": "",
        "SERVER_NAME": name, "SERVER_PORT": port or "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": host,
        "REMOTE_ADDR": "127.0.0.1", "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": settings.DEPLOY_SCHEME,
        "wsgi.errors": io.StringIO(), "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    for key, value in headers.items():
        environ["HTTP_" + key.upper().replace("-", "_")] = value
    started = time.monotonic()
    response = _handler().get_response(WSGIRequest(environ))
    try:
        if response.streaming:
            chunks, size = [], 0
            for chunk in response.streaming_content:
                chunks.append(chunk)
                size += len(chunk)
                if size >= HEAD_BYTES:
                    break
            body = b"".join(chunks)
        else:
            body = response.content
    finally:
        _release(response)
    head = body[:HEAD_BYTES].decode("utf-8", errors="replace").replace("\x00", "")  # storable text
    return EdgeAnswer(status_code=response.status_code, head=head,
                      duration_ms=int((time.monotonic() - started) * 1000))
