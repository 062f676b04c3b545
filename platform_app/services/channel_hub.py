"""A per-process pub/sub hub for long-lived streams (log streams today; any future live feed).

One Redis pub/sub connection per event loop, so one per ASGI worker process, fans messages out to every local
subscriber by channel: a thousand open streams cost one Redis connection, not a thousand. Publishers use the
ordinary client (`PUBLISH channel payload`); subscribers only learn that something arrived and re-read their
source of truth, so a missed message costs latency, never data.
"""
import asyncio
import logging
import weakref

from django.conf import settings

logger = logging.getLogger(__name__)


class Subscription:
    """One local listener on a channel of the hub."""

    def __init__(self, hub: "ChannelHub", channel: str):
        self.hub, self.channel = hub, channel
        self._pending = False  # a message arrived while nobody waited
        self._waiter: asyncio.Future | None = None

    @property
    def generation(self) -> int:
        """Changes with every message this process receives on the channel (unique across the hub's life)."""
        return self.hub._generations.get(self.channel, 0)

    async def wait(self, timeout: float) -> bool:
        """True once a message arrived since the last wait (at once if one is pending), False on timeout."""
        if self._pending:
            self._pending = False
            return True
        # a bare future and a timer: cheaper than wait_for's task when a thousand streams wake together
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(timeout, _settle, waiter, False)
        try:
            return await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _notify(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(True)
        else:
            self._pending = True

    async def close(self) -> None:
        await self.hub._unsubscribe(self)


class ChannelHub:
    """One Redis pub/sub connection per event loop, shared by every local subscriber: SUBSCRIBE when a channel
    gets its first local subscriber, UNSUBSCRIBE after its last, and close the connection when none are left."""

    def __init__(self, url: str):
        import redis.asyncio

        self._client = redis.asyncio.Redis.from_url(url)
        self._channels: dict[str, set[Subscription]] = {}
        self._generations: dict[str, int] = {}
        self._tick = 0
        self._pubsub = None  # set while the reader task holds a working connection
        self._task: asyncio.Task | None = None
        self._outage = False  # logged once per outage, not once per retry

    @property
    def healthy(self) -> bool:
        return self._pubsub is not None

    async def subscribe(self, channel: str) -> Subscription:
        sub = Subscription(self, channel)
        local = self._channels.get(channel)
        if local is None:
            local = self._channels[channel] = set()
            self._bump(channel)
        local.add(sub)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        elif len(local) == 1 and self._pubsub is not None:
            try:
                await self._pubsub.subscribe(channel)
            except Exception:  # noqa: BLE001 - the reader reconnects and subscribes every channel again
                logger.warning("pub/sub subscribe failed", exc_info=True)
        return sub

    async def _unsubscribe(self, sub: Subscription) -> None:
        local = self._channels.get(sub.channel)
        if local is None or sub not in local:
            return
        local.discard(sub)
        if local:
            return
        del self._channels[sub.channel]
        self._generations.pop(sub.channel, None)
        if not self._channels and self._task is not None:
            task, self._task, self._pubsub = self._task, None, None
            task.cancel()  # its cleanup closes the connection
        elif self._pubsub is not None:
            try:
                await self._pubsub.unsubscribe(sub.channel)
            except Exception:  # noqa: BLE001 - a stale subscription only brings messages nobody listens to
                pass

    async def aclose(self) -> None:
        task, self._task, self._pubsub = self._task, None, None
        self._channels.clear()
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._client.aclose()

    def _bump(self, channel: str) -> None:
        self._tick += 1
        self._generations[channel] = self._tick

    def _wake(self, channels) -> None:
        for channel in list(channels):
            self._bump(channel)
            for sub in self._channels.get(channel, ()):
                sub._notify()

    async def _run(self) -> None:
        """Hold the connection while anything is subscribed: (re)connect, subscribe, dispatch."""
        me = asyncio.current_task()
        while self._channels and self._task is me:
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                wanted = set(self._channels)
                await pubsub.subscribe(*wanted)
                if self._task is not me:
                    return
                self._pubsub, self._outage = pubsub, False
                if set(self._channels) - wanted:
                    await pubsub.subscribe(*(set(self._channels) - wanted))
                self._wake(self._channels)  # anything published while we were not listening
                while self._channels:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message and message["type"] == "message":
                        self._wake([message["channel"].decode()])
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis down: streams poll until it is back
                if not self._outage:
                    self._outage = True
                    logger.warning("pub/sub connection lost; streams poll until it is back", exc_info=True)
            finally:
                if self._pubsub is pubsub:
                    self._pubsub = None
                try:
                    await pubsub.aclose()
                except Exception:  # noqa: BLE001
                    pass
            if self._channels and self._task is me:
                await asyncio.sleep(1.0)


def _settle(waiter: asyncio.Future, value) -> None:
    if not waiter.done():
        waiter.set_result(value)


_hubs: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ChannelHub]" = weakref.WeakKeyDictionary()


def channel_hub() -> ChannelHub | None:
    """The hub of the running event loop, or None without Redis (then streams poll)."""
    if not settings.REDIS_URL:
        return None
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = ChannelHub(settings.REDIS_URL)
    return hub


async def channel_hub_close() -> None:
    """Close the running loop's hub (a private loop about to end; a worker's hub lives as long as it does)."""
    hub = _hubs.pop(asyncio.get_running_loop(), None)
    if hub is not None:
        await hub.aclose()
