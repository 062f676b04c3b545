"""Live deployment logs as server-sent events.

Under ASGI a stream is an async generator: while it waits it holds no thread and no database connection. Its
reads run on a small shared thread pool, and streams reading the same lines at the same moment share one query.
With Redis configured, streams wait on the process's channel hub (woken by `log_publish`), else they poll.
"""
import asyncio
import queue
import threading
import time
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from config.event_streams import stream_counted
from platform_app.models import Deployment
from platform_app.services.channel_hub import channel_hub, channel_hub_close
from platform_app.services.deployments.deployment_log import log_channel
from platform_app.services.deployments.log_archive import log_lines

PAGE = 500  # lines per read
FINISHED = {s.value for s in (Deployment.Status.READY, Deployment.Status.ERROR, Deployment.Status.CANCELED)}
RunSync = Callable[[Callable], Awaitable]


# Reads ----------------------------------------------------------------------------------------------------

# Few threads: every open stream of the process shares them, and each holds at most one database connection.
_READS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="stream-read")
_inflight: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()
_reading: set = set()  # the reads in flight


async def run_in_pool(fn: Callable):
    """Run a database read on the shared stream threads, then give the connection back (to the pool, if any)."""

    def call():
        try:
            return fn()
        finally:
            close_old_connections()

    return await sync_to_async(call, thread_sensitive=False, executor=_READS)()


async def shared_read(key, make: Callable[[], Awaitable]):
    """Await `make()`, or join the identical read another stream of this loop already has in flight. Each waiter
    has a future of its own, settled by the read's one callback: cancelling a waiter (its client left) leaves the
    read to the others."""
    loop = asyncio.get_running_loop()
    pending = _inflight.get(loop)
    if pending is None:
        pending = _inflight[loop] = {}
    waiters = pending.get(key)
    if waiters is None:
        waiters = pending[key] = []
        read = asyncio.ensure_future(make())
        _reading.add(read)  # the loop keeps only a weak reference to a task
        read.add_done_callback(partial(_read_done, pending, key, waiters))
    waiter = loop.create_future()
    waiters.append(waiter)
    return await waiter


def _read_done(pending: dict, key, waiters: list, read: asyncio.Future) -> None:
    _reading.discard(read)
    if pending.get(key) is waiters:
        del pending[key]
    if read.cancelled():
        for waiter in waiters:
            waiter.cancel()
        return
    error = read.exception()
    for waiter in waiters:
        if not waiter.done():
            if error is None:
                waiter.set_result(read.result())
            else:
                waiter.set_exception(error)


def _log_after(deployment_id: str, after: int) -> tuple[str | None, int, int, bytes]:
    """The status, how many lines came next, the last one's number and their events as one ready-to-send chunk
    (built once, whoever shares the read; one write per read however many lines it holds)."""
    # status first: when it says finished, the lines read next are all there is
    status = Deployment.objects.filter(pk=deployment_id).values_list("status", flat=True).first()
    lines = log_lines(deployment_id, after=after, limit=PAGE, times=False)  # events carry no time
    return (status, len(lines), lines[-1].seq if lines else after,
            b"".join(_log_event(line.seq, line.text) for line in lines))


def _log_event(seq: int, text: str) -> bytes:
    data = text.replace("\n", " ")
    return f"id: {seq}\nevent: log\ndata: {data}\n\n".encode()


REPLAY_WHOLE_LINES = 10_000  # a finished log up to this long after the reader's line is answered in one read


def log_replay_whole(*, deployment_id: str, status: str, after: int) -> bytes:
    """The whole stream of a finished build's log after line `after`, the bytes `log_stream_events` sends: with the
    status read first and finished, the lines read next are all there are, so the answer is one read and one write,
    the same for every reader (and kept, api/kept.py). Empty for a log longer than REPLAY_WHOLE_LINES: that one is
    streamed in pages (and, kept empty, not read whole again)."""
    lines = log_lines(deployment_id, after=after, limit=REPLAY_WHOLE_LINES + 1, times=False)
    if len(lines) > REPLAY_WHOLE_LINES:
        return b""
    return b"".join((b": stream open\n\n", *(_log_event(line.seq, line.text) for line in lines),
                     f"event: end\ndata: {status}\n\n".encode()))


# Streams --------------------------------------------------------------------------------------------------

async def log_stream_events(*, deployment_id: str, after: int = 0, poll: float = 0.5, heartbeat: float = 15.0,
                            max_seconds: float = 3600.0, run: RunSync = run_in_pool,
                            access_lost: Callable[[], str | None] | None = None,
                            access_key=None, recheck: float = 30.0,
                            on_end: Callable[[], None] | None = None) -> AsyncIterator[bytes]:
    """Replay stored lines after `after`, follow new ones, end with an `end` event carrying the status.

    `access_lost` (a database read, run like the others once in every `recheck` seconds) says why the reader may
    no longer read, if so: the stream then ends with a `revoked` event carrying that reason, whatever the build
    does. Streams of the same `access_key` (credential and workspace) check in the same period of `recheck`
    seconds and share the read; other keys' periods are offset, so the checks of many readers are spread.
    `on_end` is called when the stream ends, however it ends."""
    hub, sub = channel_hub(), None
    try:
        if hub:
            sub = await hub.subscribe(log_channel(deployment_id))
        started = idle_since = time.monotonic()
        offset = _recheck_offset(access_key, recheck)
        checked = _recheck_period(offset, recheck)  # the request that opened the stream was checked
        last = after
        yield b": stream open\n\n"
        while time.monotonic() - started < max_seconds:
            key = ("log", deployment_id, last, sub.generation if sub else None)
            status, count, last_read, chunk = await shared_read(
                key, partial(run, partial(_log_after, deployment_id, last)))
            # checked after the read, so no line goes out more than `recheck` seconds after the last check
            if access_lost is not None and (period := _recheck_period(offset, recheck)) != checked:
                checked = period
                reason = await (run(access_lost) if access_key is None else
                                shared_read(("access", access_key, period), partial(run, access_lost)))
                if reason:
                    yield f"event: revoked\ndata: {reason}\n\n".encode()
                    return
            if count:
                last = last_read
                yield chunk
            if status is None:
                return  # deleted meanwhile
            if count == PAGE:
                continue
            if status in FINISHED:
                yield f"event: end\ndata: {status}\n\n".encode()
                return
            if count:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > heartbeat:
                idle_since = time.monotonic()
                yield b": keep-alive\n\n"
            if sub is not None:
                # a message wakes the stream at once; the timeout re-checks status changes no one published
                await sub.wait(poll * 4 if hub.healthy else poll)
            else:
                await asyncio.sleep(poll)
    finally:
        if on_end is not None:
            on_end()
        if sub is not None:
            await sub.close()


def _recheck_offset(access_key, recheck: float) -> float:
    """Where this key's `recheck`-second periods start, by the key's hash (taken once: a repr is not cheap)."""
    return zlib.crc32(repr(access_key).encode()) % 1000 / 1000 * recheck


def _recheck_period(offset: float, recheck: float) -> int:
    """The number of the current `recheck`-second period of a key whose periods start at `offset`."""
    return int((time.time() + offset) // recheck)


def log_stream_open(*, deployment_id: str, holder, after: int = 0, asynchronous: bool = True, **options):
    """The body of a log stream response: an async iterator for ASGI, else one a synchronous server can drive.
    It is one of `holder`'s (a user id) open streams (config/event_streams.py) until it ends."""
    def make(on_end):
        if asynchronous:
            return log_stream_events(deployment_id=deployment_id, after=after, on_end=on_end, **options)
        return iterate_blocking(lambda run: log_stream_events(deployment_id=deployment_id, after=after, run=run,
                                                              on_end=on_end, **options))

    return stream_counted(holder, make)


def iterate_blocking(make_events: Callable[[RunSync], AsyncIterator[bytes]]) -> Iterator[bytes]:
    """Serve an async stream to synchronous code (WSGI, the test client, scripts), chunk by chunk.

    The stream runs on a private event loop in a helper thread; its reads come back to the calling thread, so
    they use the caller's database connection (and, under the test client, the test's transaction)."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    loop = asyncio.new_event_loop()

    async def here(fn):
        answer = loop.create_future()
        inbox.put(("call", fn, answer))
        return await answer

    async def pump():
        try:
            async for chunk in make_events(here):
                inbox.put(("chunk", chunk, None))
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # noqa: BLE001 - raised again in the calling thread
            inbox.put(("error", exc, None))
        finally:
            await channel_hub_close()
            inbox.put(("end", None, None))

    def settle(answer, result, error):
        if answer.done():
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(result)

    task = loop.create_task(pump())
    thread = threading.Thread(target=loop.run_until_complete, args=(task,), name="event-stream", daemon=True)
    thread.start()
    ended = False
    try:
        while True:
            kind, value, answer = inbox.get()
            if kind == "call":
                try:
                    result, error = value(), None
                except Exception as exc:  # noqa: BLE001 - handed to the stream
                    result, error = None, exc
                loop.call_soon_threadsafe(settle, answer, result, error)
            elif kind == "chunk":
                yield value
            elif kind == "error":
                raise value
            else:
                ended = True
                return
    finally:
        if not ended:  # the caller stopped early (client gone) or an error: unwind the stream
            loop.call_soon_threadsafe(task.cancel)
            while (item := inbox.get())[0] != "end":
                if item[0] == "call":
                    loop.call_soon_threadsafe(item[2].cancel)
        thread.join()
        loop.close()
