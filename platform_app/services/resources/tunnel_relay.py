"""How a tunnel request crosses processes (docs/tunnel.md, "Across processes").

The edge receives a request on a thread of whichever web process the visitor reached; the client's WebSocket is
held by the event loop of one process (its *holder*). The request travels as one *frame* to the holder, which
sends it down the WebSocket, and the answer frame travels back the same way:

- With Redis (`REDIS_URL`): the edge appends the frame to the connection's list `tunnel:inbox:<connection>` and
  publishes on `tunnel:<connection>`, which the holder's loop waits on through the process's channel hub
  (services/channel_hub.py). A publish nobody receives means no live holder: 503 at once. The holder pushes the
  answer to `tunnel:answer:<request>`, on which the edge blocks (BLPOP) until TUNNEL_ANSWER_TIMEOUT_SECONDS.
- Without Redis (`make run`): a `TunnelRequest` row. The holder polls for its connection's rows every
  TUNNEL_POLL_SECONDS and writes the answer into the row; the edge polls the row as often. A row no holder claims
  within TUNNEL_CLAIM_TIMEOUT_SECONDS is 503 (its holder died).

A frame is bytes: 4 bytes of big-endian length, a JSON head of that length, then the body as is (no base64).
"""
import asyncio
import json
import logging
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from config.long_poll import connections_release, sleep_released
from config.redis_pool import shared_pool
from platform_app.models import TunnelRequest
from platform_app.services.channel_hub import channel_hub

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 256 * 1024  # method, path and headers of one request or answer
BATCH = 16  # requests a holder takes from its inbox at once


class NotConnected(Exception):
    """No process holding a connection of the tunnel took the request (503)."""


class NoAnswer(Exception):
    """The client took the request but did not answer in time (502)."""


# Frames ---------------------------------------------------------------------------------------------------

def frame_pack(head: dict, body: bytes = b"") -> bytes:
    raw = json.dumps(head, separators=(",", ":")).encode()
    return len(raw).to_bytes(4, "big") + raw + body


def frame_unpack(data: bytes) -> tuple[dict, bytes]:
    """(head, body); ValueError for anything that is not a frame."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) < 4:
        raise ValueError("not a frame")
    data = bytes(data)
    size = int.from_bytes(data[:4], "big")
    if size > MAX_HEAD_BYTES or size > len(data) - 4:
        raise ValueError("bad frame head length")
    head = json.loads(data[4:4 + size])
    if not isinstance(head, dict):
        raise ValueError("the frame head is not an object")
    return head, data[4 + size:]


def _inbox_channel(connection_id: str) -> str:
    return f"tunnel:{connection_id}"


def _inbox_key(connection_id: str) -> str:
    return f"tunnel:inbox:{connection_id}"


def _answer_key(request_id: str) -> str:
    return f"tunnel:answer:{request_id}"


CLOSE = frame_pack({"type": "close"})  # to a holder: close this connection now (the tunnel stopped or restarted)


# The edge's side (a request thread) ---------------------------------------------------------------------------

def _redis(timeout: float):
    import redis

    return redis.Redis(connection_pool=shared_pool(settings.REDIS_URL, socket_connect_timeout=1.0,
                                                   socket_timeout=timeout + 5))


def relay_request(*, connection_id: str, request_id: str, frame: bytes, timeout: float) -> bytes:
    """Hand `frame` to the holder of `connection_id` and wait for the answer frame (NotConnected, NoAnswer)."""
    if settings.REDIS_URL:
        return _redis_request(connection_id, request_id, frame, timeout)
    return _db_request(connection_id, request_id, frame, timeout)


def _redis_request(connection_id: str, request_id: str, frame: bytes, timeout: float) -> bytes:
    import redis

    client, inbox = _redis(timeout), _inbox_key(connection_id)
    try:
        pipe = client.pipeline()
        pipe.rpush(inbox, frame).expire(inbox, int(timeout) + 5).publish(_inbox_channel(connection_id), b"1")
        receivers = pipe.execute()[-1]
        if not receivers:
            client.lrem(inbox, 1, frame)
            raise NotConnected("no holder listens")
        connections_release()  # the answer may take TUNNEL_ANSWER_TIMEOUT_SECONDS
        got = client.blpop([_answer_key(request_id)], timeout=timeout)
    except redis.RedisError as exc:
        raise NotConnected(f"Redis: {exc}") from exc
    if got is None:
        raise NoAnswer()
    return got[1]


def _db_request(connection_id: str, request_id: str, frame: bytes, timeout: float) -> bytes:
    TunnelRequest.objects.create(id=request_id, connection_id=connection_id, frame=frame)
    started = time.monotonic()
    try:
        while True:
            sleep_released(settings.TUNNEL_POLL_SECONDS)
            row = TunnelRequest.objects.filter(pk=request_id).values("claimed_at", "answered_at").first()
            if row is None:
                raise NotConnected("the connection ended")  # stopped: its relay rows went with it
            if row["answered_at"] is not None:
                answer = TunnelRequest.objects.filter(pk=request_id).values_list("answer", flat=True).first()
                return bytes(answer or b"")
            waited = time.monotonic() - started
            if row["claimed_at"] is None and waited > settings.TUNNEL_CLAIM_TIMEOUT_SECONDS:
                raise NotConnected("no holder claimed the request")
            if waited > timeout:
                raise NoAnswer()
    finally:
        TunnelRequest.objects.filter(pk=request_id).delete()


def relay_close(connection_ids) -> None:
    """Ask the holders of these connections to close them now (a stop, a new start). Without Redis, or when the
    message is lost, each holder notices on its next heartbeat that its connection row is gone."""
    if not settings.REDIS_URL or not connection_ids:
        return
    try:
        pipe = _redis(1.0).pipeline()
        for connection_id in connection_ids:
            inbox = _inbox_key(connection_id)
            pipe.rpush(inbox, CLOSE).expire(inbox, 60).publish(_inbox_channel(connection_id), b"1")
        pipe.execute()
    except Exception:  # noqa: BLE001 - the heartbeat closes them a little later
        logger.warning("could not tell tunnel holders to close", exc_info=True)


# The holder's side (the event loop holding the WebSocket) -----------------------------------------------------

# Database calls of the holders: few threads, shared by every connection of the process.
_DB = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tunnel-db")


async def run_db(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` on the holders' database threads (never on the event loop)."""

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return await sync_to_async(call, thread_sensitive=False, executor=_DB)()


_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple]" = weakref.WeakKeyDictionary()


def _async_redis():
    """One asyncio Redis client per event loop (and URL)."""
    import redis.asyncio

    loop = asyncio.get_running_loop()
    url, client = _clients.get(loop, (None, None))
    if url != settings.REDIS_URL:
        client = redis.asyncio.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1.0, socket_timeout=5.0)
        _clients[loop] = (settings.REDIS_URL, client)
    return client


def inbox_for(connection_id: str):
    """Where the requests of one connection arrive in its holder."""
    return RedisInbox(connection_id) if settings.REDIS_URL else DatabaseInbox(connection_id)


class RedisInbox:
    def __init__(self, connection_id: str):
        self.connection_id = connection_id
        self.channel, self.key = _inbox_channel(connection_id), _inbox_key(connection_id)
        self.subscription = None
        self._more = False

    async def open(self) -> None:
        """Subscribe, and wait (a few milliseconds, 5 s at most) until Redis has the subscription: the edge takes
        a publish nobody receives for a dead holder."""
        import redis

        self.subscription = await channel_hub().subscribe(self.channel)
        client, loop = _async_redis(), asyncio.get_running_loop()
        deadline = loop.time() + 5
        while loop.time() < deadline:
            try:
                if dict(await client.pubsub_numsub(self.channel)).get(self.channel.encode()):
                    return
            except redis.RedisError:
                pass
            await asyncio.sleep(0.02)

    async def get(self, timeout: float) -> list[bytes]:
        """The frames waiting (at most BATCH), after a wake-up or `timeout` (then it looks anyway: a missed wake-up
        costs latency, never a request)."""
        import redis

        if self._more:
            self._more = False
        else:
            await self.subscription.wait(timeout)
        try:
            frames = await _async_redis().lpop(self.key, BATCH)
        except redis.RedisError:
            return []
        self._more = len(frames or ()) == BATCH
        return list(frames or ())

    async def answer(self, request_id: str, frame: bytes) -> None:
        key = _answer_key(request_id)
        pipe = _async_redis().pipeline()
        pipe.rpush(key, frame).expire(key, 60)
        await pipe.execute()

    async def close(self) -> None:
        if self.subscription is not None:
            await self.subscription.close()


class DatabaseInbox:
    def __init__(self, connection_id: str):
        self.connection_id = connection_id

    async def open(self) -> None:
        return None

    async def get(self, timeout: float) -> list[bytes]:
        await asyncio.sleep(settings.TUNNEL_POLL_SECONDS)
        try:
            return await run_db(self._claim)
        except Exception:  # noqa: BLE001 - the database is away: the edge cannot reach us either; look again later
            logger.warning("tunnel inbox: cannot read the relay rows", exc_info=True)
            await asyncio.sleep(timeout)
            return []

    def _claim(self) -> list[bytes]:
        rows = list(TunnelRequest.objects.filter(connection_id=self.connection_id, claimed_at__isnull=True)
                    .values_list("pk", "frame")[:BATCH])
        if rows:
            TunnelRequest.objects.filter(pk__in=[pk for pk, _ in rows]).update(claimed_at=timezone.now())
        return [bytes(frame) for _, frame in rows]

    async def answer(self, request_id: str, frame: bytes) -> None:
        await run_db(lambda: TunnelRequest.objects.filter(pk=request_id, connection_id=self.connection_id)
                     .update(answer=frame, answered_at=timezone.now()))

    async def close(self) -> None:
        return None
