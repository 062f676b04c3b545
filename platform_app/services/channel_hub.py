"""A per-process pub/sub hub for long-lived streams (log streams today; any future live feed).

One Redis pub/sub connection per event loop, so one per ASGI worker process, fans messages out to every local
subscriber by channel: a thousand open streams cost one Redis connection, not a thousand. Publishers use the
ordinary client (`PUBLISH channel payload`); subscribers only learn that something arrived and re-read their
source of truth, so a missed message costs latency, never data.

A process with many subscribers batches: `_wake_gap` spaces the wake-ups of a channel's subscribers so the process
wakes them about STREAM_WAKES_PER_SECOND times a second together; messages in between are one wake-up.
"""
import asyncio
import logging
import math
import weakref

from django.conf import settings

logger = logging.getLogger(__name__)


class Subscription:
    """One local listener on a channel of the hub."""

    def __init__(self, hub: "ChannelHub", channel: str):
        self.hub, self.channel = hub, channel
        self._pending = False  # a message arrived while nobody waited
        self._waiter: asyncio.Future | None = None
        self._deadline = 0.0  # when the current wait times out (the loop's clock)

    @property
    def generation(self) -> int:
        """Changes with every message this process receives on the channel (unique across the hub's life)."""
        return self.hub._generations.get(self.channel, 0)

    async def wait(self, timeout: float) -> bool:
        """True once a message arrived since the last wait (at once if one is pending), False on timeout (up to
        TIMEOUT_STEP late: the waits of a process that time out together share one timer)."""
        if self._pending:
            self._pending = False
            return True
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._deadline = self.hub._time_out(self, loop.time() + timeout)
        try:
            return await waiter
        finally:
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
        self._subscribers = 0  # local subscribers across channels
        self._due: set[str] = set()  # channels whose wake-up waits for the next tick
        self._timeouts: dict[float, set[Subscription]] = {}  # by deadline: the waits that time out then
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
        self._subscribers += 1
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
        self._subscribers -= 1
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
        gap = _wake_gap(self._subscribers)
        tick = math.ceil(asyncio.get_running_loop().time() / gap) * gap if gap else None
        for channel in list(channels):
            if tick is None:
                self._notify(channel)
            elif channel not in self._due:
                self._due.add(channel)
                asyncio.get_running_loop().call_at(tick, self._notify, channel)

    def _time_out(self, sub: Subscription, deadline: float) -> float:
        """Have `sub`'s wait time out at `deadline` rounded up to TIMEOUT_STEP, with every wait due then: one timer
        for them all, where a timer each cost a heap entry each and a heap rebuilt as they were cancelled."""
        at = math.ceil(deadline / TIMEOUT_STEP) * TIMEOUT_STEP
        due = self._timeouts.get(at)
        if due is None:
            due = self._timeouts[at] = set()
            asyncio.get_running_loop().call_at(at, self._timed_out, at)
        due.add(sub)
        return at

    def _timed_out(self, at: float) -> None:
        for sub in self._timeouts.pop(at, ()):
            if sub._deadline <= at and sub._waiter is not None:  # not woken meanwhile, nor waiting again since
                _settle(sub._waiter, False)

    def _notify(self, channel: str) -> None:
        self._due.discard(channel)
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


TIMEOUT_STEP = 0.25  # seconds: waits that time out within one step share a timer
WAKE_STEP = 0.05  # seconds: the unit of the gap between wake-ups (below one step, none)
WAKE_MAX_GAP = 1.0  # seconds: the longest a message waits for its wake-up


def _wake_gap(subscribers: int) -> float:
    """Seconds between a channel's wake-ups for a process with this many subscribers: each wake-up is about one
    write per subscriber, so `subscribers / STREAM_WAKES_PER_SECOND`, in steps of WAKE_STEP up to WAKE_MAX_GAP."""
    budget = settings.STREAM_WAKES_PER_SECOND
    if budget <= 0:
        return 0.0
    return min(math.floor(subscribers / budget / WAKE_STEP) * WAKE_STEP, WAKE_MAX_GAP)


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
