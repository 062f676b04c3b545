"""The web server's worker (config/gunicorn.py runs it): an HTTP protocol with a deadline for the request head, and
new connections accepted by the worker holding the fewest (config/web_balance.py).

uvicorn times out an idle kept-alive connection, but not one that is still sending its request line and headers:
a client that opens a connection, or trickles a header line every few seconds, held it (and a worker's file
descriptor) for as long as it liked. Here a connection must complete each request head within
`WEB_HEADER_TIMEOUT` seconds (10) of its first byte, and its first head within that time of connecting;
otherwise it is closed. The body and the response are not limited here (uploads, log streams).
"""
import os
import sys

from gunicorn.arbiter import Arbiter
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker as _UvicornWorker

from config.web_balance import BalancedServer

HEADER_TIMEOUT_SECONDS = float(os.environ.get("WEB_HEADER_TIMEOUT", "10"))


class HeadDeadline:
    """The timer of one connection's pending request head; the protocol below arms and disarms it."""

    _head_timer = None

    def _head_arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._head_expired)

    def _head_disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.logger.info("Closed a connection whose request head took over %gs.", HEADER_TIMEOUT_SECONDS)
            self.transport.close()


class HttpToolsHeadDeadlineProtocol(HeadDeadline, HttpToolsProtocol):
    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._head_arm()

    def connection_lost(self, exc) -> None:
        self._head_disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:  # the first byte of a head (a kept-alive connection's next request)
        self._head_arm()
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_disarm()
        super().on_headers_complete()


class UvicornWorker(_UvicornWorker):
    """uvicorn_worker's worker (gunicorn's `keepalive` becomes uvicorn's `timeout_keep_alive`) with the protocol
    above (httptools's parser, as uvicorn's `http="auto"` picks when it is installed: requirements.txt) and the
    balanced accept."""

    CONFIG_KWARGS = {"loop": "auto", "http": HttpToolsHeadDeadlineProtocol}

    async def _serve(self) -> None:
        """uvicorn_worker's, with the server accepting for the least loaded worker (config/web_balance.py) when the
        master gave this worker a slot of its connection counts (config/gunicorn.py, `pre_fork`)."""
        self.config.app = self.wsgi
        slot = getattr(self, "connection_slot", None)
        if slot is None:
            server = Server(config=self.config)
        else:
            server = BalancedServer(self.config, counts=self.connection_counts, slot=slot)
        self._install_sigquit_handler()
        await server.serve(sockets=self.sockets)
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
