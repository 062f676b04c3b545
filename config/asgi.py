"""The ASGI application gunicorn's uvicorn workers serve (`config/gunicorn.py`).

Django runs a request's synchronous code (middleware, DRF views) on a thread of the request's own, kept until the
response is fully sent. Three changes to the stock handler, each measured through the server (docs/performance.md):

- The middleware chain is built synchronous, as under WSGI, and run in one hop from the event loop to the
  request's thread. Built for async (the stock way), a chain of synchronous middleware hops back to the loop to
  reach the view and again to the thread to run it, on every request. No view of the project is async; a stream
  is a synchronous view returning an async iterator, which the loop then sends.
- The request's thread is borrowed from a few idle ones the process keeps, not started for each request.
- That hop also sends `request_started` and, for a response that is not a stream, closes it (`request_finished`):
  the stock handler makes a hop of each.

An answer a view marked as the same for every request without credentials (config/kept_answers.py) is recorded
as it is sent and sent again from the event loop, without entering Django, while the data behind it holds.

For a long-lived async stream (server-sent events) holding the thread would keep it, and the database connection
the view used, for as long as the client listens. This handler gives both back as soon as the view has returned an
async streaming response.

WebSocket scopes (Django has no handler for them) go by path to the ASGI callables named in
`settings.WEBSOCKET_ROUTES` (the tunnel's `/v1/tunnel/connect`); any other path is refused with 404.
"""
import asyncio
import contextvars
import os
from concurrent.futures import Executor, ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402
from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from django.core import signals  # noqa: E402
from django.core.exceptions import RequestAborted  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.db import connections  # noqa: E402
from django.http import FileResponse  # noqa: E402
from django.urls import set_script_prefix  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from config import kept_answers  # noqa: E402


IDLE_REQUEST_THREADS = 32  # idle threads kept per process; beyond that a returned thread ends
_idle: list[ThreadPoolExecutor] = []
_in_use = 0  # threads lent to requests now (read by tests)


def request_threads_in_use() -> int:
    return _in_use


class RequestThread(Executor):
    """The one thread a request's synchronous code runs on: borrowed on first use, given back on demand (a later
    call borrows again). Borrowing and giving back happen on the event loop's thread only."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, fn, /, *args, **kwargs):
        global _in_use
        if self._pool is None:
            self._pool = _idle.pop() if _idle else ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
            _in_use += 1
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait=True, *, cancel_futures=False):
        """Only once the request's synchronous calls have returned (they are awaited before this is called)."""
        global _in_use
        pool, self._pool = self._pool, None
        if pool is None:
            return
        _in_use -= 1
        if len(_idle) < IDLE_REQUEST_THREADS:
            _idle.append(pool)
        else:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


_request_thread: contextvars.ContextVar[RequestThread] = contextvars.ContextVar("request_thread")
# the request's key for a kept answer and what `kept_answers.store` checks, while Django makes the answer
_answer_key: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("answer_key", default=None)


class Handler(ASGIHandler):
    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)  # one synchronous chain (module docstring)

    async def handle(self, scope, receive, send):
        """Django's, with one hop to the request's thread instead of three: the stock handler sends
        `request_started`, runs the view and closes the response (`request_finished`) in a hop each. A response
        that is not a stream is complete when the view returns, so it is closed before it is sent; a stream is
        sent as the stock handler sends it (watching for the client's disconnect) and closed after."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        try:
            response = await sync_to_async(self._respond, thread_sensitive=True)(scope, body_file)
            if response.streaming:
                await self._stream(response, receive, send)
                await sync_to_async(response.close)()
            else:
                await self.send_response(response, send)
        finally:
            body_file.close()

    def _respond(self, scope, body_file):
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size  # the server chunks the rest
        if not response.streaming:
            response.close()
        return response

    async def _stream(self, response, receive, send):
        """Send a streaming response until it ends or the client goes (then the stream is cancelled)."""
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)),
                 asyncio.create_task(self.send_response(response, send))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if not task.done():
                task.cancel()
            try:
                await task
            except (asyncio.CancelledError, RequestAborted):
                pass

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        if scope["type"] == "websocket":
            return await _websocket(scope, receive, send)
        key = kept_answers.request_key(scope)
        if key is not None:
            messages = kept_answers.kept(key)
            if messages is not None:
                for message in messages:
                    await send(message)
                return
        thread = RequestThread()
        token = _request_thread.set(thread)
        answer_token = _answer_key.set(None if key is None else (key, kept_answers.request_started()))
        try:
            async with ThreadSensitiveContext(executor=thread):
                await super().__call__(scope, receive, send)
        finally:
            _answer_key.reset(answer_token)
            _request_thread.reset(token)
            thread.shutdown(wait=False)  # back to the idle ones; never block the event loop on it

    async def send_response(self, response, send):
        thread = _request_thread.get(None)
        if response.streaming and response.is_async and thread is not None:
            await sync_to_async(connections.close_all)()  # back to the pool, on the thread that opened them
            thread.shutdown(wait=False)
        pending = _answer_key.get()
        if pending is not None and kept_answers.keepable(response):
            messages = []

            async def recorded(message):
                messages.append(message)
                await send(message)

            await super().send_response(response, recorded)
            kept_answers.store(*pending, response, messages)
            return
        await super().send_response(response, send)


async def _lifespan(receive, send):
    """Nothing to start or stop; answering keeps the server from logging that lifespan is unsupported."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


_websocket_routes: dict = {}


async def _websocket(scope, receive, send):
    """The WebSocket route of the scope's path (WEBSOCKET_ROUTES), or a 404 in the handshake."""
    from django.conf import settings

    dotted = settings.WEBSOCKET_ROUTES.get(scope["path"])
    if dotted is None:
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await send({"type": "websocket.http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "websocket.http.response.body", "body": b'{"code":"not_found","message":"No '
                        b'WebSocket route here.","details":null,"status":404}'})
        else:
            await send({"type": "websocket.close", "code": 1008})
        return
    if dotted not in _websocket_routes:
        _websocket_routes[dotted] = import_string(dotted)
    return await _websocket_routes[dotted](scope, receive, send)


django.setup(set_prefix=False)
application = Handler()
