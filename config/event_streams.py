"""Open event streams (server-sent events) per user and web process, bounded: each holds memory (about 54 KiB for
a log stream) and a socket for as long as its client keeps it, so one user's streams must not fill a worker.

`stream_counted(holder, make_body)` counts a body as one of `holder`'s (a user id) streams from now until it
ends, however it ends: `make_body(on_end)` makes the body, which calls `on_end` when it ends or is closed (the
client went away); a body dropped without ever being read gives its place back when it is collected. Past
EVENT_STREAMS_PER_USER it raises RateLimited (429 `too_many_streams`) and makes nothing.
"""
import collections
import threading
import weakref
from collections.abc import Callable

from django.conf import settings

from config.errors import RateLimited

_open: collections.Counter = collections.Counter()  # user id → streams open in this process
_lock = threading.RLock()  # a body collected while this thread holds it gives its place back here too


def stream_counted(holder, make_body: Callable[[Callable[[], None]], object]):
    with _lock:
        if _open[holder] >= settings.EVENT_STREAMS_PER_USER:
            raise RateLimited(f"You have {settings.EVENT_STREAMS_PER_USER} streams open; close one first.",
                              code="too_many_streams", retry_after=10)
        _open[holder] += 1
    try:
        body = make_body(lambda: given_back())
    except BaseException:
        _given_back(holder)
        raise
    given_back = weakref.finalize(body, _given_back, holder)  # runs once, whichever comes first
    return body


def streams_open(holder) -> int:
    with _lock:
        return _open[holder]


def _given_back(holder) -> None:
    with _lock:
        _open[holder] -= 1
        if _open[holder] <= 0:
            del _open[holder]
