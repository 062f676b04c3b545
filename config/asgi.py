"""The ASGI application gunicorn's uvicorn workers serve (`config/gunicorn.py`).

Django runs a request's synchronous code (sync middleware, DRF views) on a thread of the request's own, kept
until the response is fully sent. For a long-lived async stream (server-sent events) that would hold a thread,
and the database connection the view used, for as long as the client listens. This handler gives both back as
soon as the view has returned an async streaming response.
"""
import contextvars
import os
from concurrent.futures import Executor, ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402
from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from django.db import connections  # noqa: E402


class RequestThread(Executor):
    """The one thread a request's synchronous code runs on: started on first use, released on demand (a later
    call starts a fresh one)."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, fn, /, *args, **kwargs):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait=True, *, cancel_futures=False):
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


_request_thread: contextvars.ContextVar[RequestThread] = contextvars.ContextVar("request_thread")


class Handler(ASGIHandler):
    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        thread = RequestThread()
        token = _request_thread.set(thread)
        try:
            async with ThreadSensitiveContext(executor=thread):
                await super().__call__(scope, receive, send)
        finally:
            _request_thread.reset(token)
            thread.shutdown(wait=False)  # never block the event loop on it

    async def send_response(self, response, send):
        thread = _request_thread.get(None)
        if response.streaming and response.is_async and thread is not None:
            await sync_to_async(connections.close_all)()  # back to the pool, on the thread that opened them
            thread.shutdown(wait=False)
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


django.setup(set_prefix=False)
application = Handler()
