"""The web server's HTTP protocol with a deadline for the request head (config/gunicorn.py runs it).

uvicorn times out an idle kept-alive connection, but not one that is still sending its request line and headers:
a client that opens a connection, or trickles a header line every few seconds, held it (and a worker's file
descriptor) for as long as it liked. Here a connection must complete each request head within
`WEB_HEADER_TIMEOUT` seconds (10) of its first byte, and its first head within that time of connecting;
otherwise it is closed. The body and the response are not limited here (uploads, log streams).
"""
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker as _UvicornWorker

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
    above: httptools's parser, as uvicorn's `http="auto"` picks when it is installed (requirements.txt)."""

    CONFIG_KWARGS = {"loop": "auto", "http": HttpToolsHeadDeadlineProtocol}
