"""config/asgi.py's handler as the production server runs it: a request's synchronous work (the started signal,
middleware and view, the finished signal) in one hop to its thread, the response closed before it is sent."""
import asyncio

import pytest
from django.core.signals import request_finished, request_started

import config.asgi


def call(application, path: str, events: list, headers=()) -> list:
    """The messages sent for one GET through the ASGI application; their types are added to `events`."""
    sent = []
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"localhost"), *headers], "client": ("127.0.0.1", 5000),
             "server": ("127.0.0.1", 8000)}

    requested = []

    async def receive():  # the request, then nothing while the client stays connected
        if requested:
            await asyncio.Event().wait()
        requested.append(1)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        events.append(message["type"])
        sent.append(message)

    asyncio.run(application(scope, receive, send))
    return sent


@pytest.fixture
def hops(monkeypatch):
    """How many times a request's code was handed to its thread, with the signals in the order they came."""
    submitted = []
    original = config.asgi.RequestThread.submit

    def submit(self, fn, /, *args, **kwargs):
        submitted.append(fn)
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(config.asgi.RequestThread, "submit", submit)
    return submitted


def test_a_request_is_one_hop_and_closed_before_it_is_sent(asgi_application, hops):
    order = []

    def started(**_):
        order.append("started")

    def finished(**_):
        order.append("finished")

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        sent = call(asgi_application, "/api/no-such-route", order, headers=[(b"cookie", b"a=b")])
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert sent[0]["status"] == 404 and b'"code": "not_found"' in sent[-1]["body"]
    assert len(hops) == 1
    assert order == ["started", "finished", "http.response.start", "http.response.body"]
