"""New connections go to the web worker holding the fewest (config/gunicorn.py, config/web_protocol.py).

gunicorn's workers share one listening socket and every idle event loop wakes for a new connection, so whichever
runs first accepts it, a burst included: the long-lived connections of a proxy or of a load generator ended up
split 8/0/8 or 4/9/3 over three workers, and one worker's requests queued while another sat idle (docs/performance.md,
"The tail of a quick answer"). Here each worker publishes how many connections it holds in memory the master maps
before forking, and accepts only while no other live worker holds fewer; a worker that is not the least loaded
looks again after `DEFER_SECONDS` and then accepts anyway, so a connection never waits more than that on a worker
that is slow to wake. nginx's `accept_mutex` and Envoy's exact connection balance do the same between processes
and threads.
"""
import asyncio
import logging
import mmap
import socket

from uvicorn.server import Server

logger = logging.getLogger("uvicorn.error")

SLOTS = 256  # workers at once, the ones starting while others stop included; past that a worker accepts freely
FREE = -1
DEFER_SECONDS = 0.002
ACCEPT_ERROR_PAUSE_SECONDS = 1.0  # out of file descriptors: stop accepting for a moment, as asyncio's server does


class ConnectionCounts:
    """One count per worker slot, shared by the master and its forked workers; a slot is written by its worker
    (its count) and by the master (claimed, freed), never by two processes at once."""

    def __init__(self, slots: int = SLOTS):
        self._memory = mmap.mmap(-1, slots * 8)  # anonymous and shared: a fork sees the same pages
        self.counts = memoryview(self._memory).cast("q")
        for slot in range(slots):
            self.counts[slot] = FREE

    def claim(self, taken: set) -> int | None:
        """A free slot for a worker about to be forked (the master, before the fork), or None when all are taken.
        It counts from the moment its worker accepts (`publish`): a worker still loading the application must not
        look like the least loaded one."""
        for slot in range(len(self.counts)):
            if slot not in taken:
                self.counts[slot] = FREE
                return slot
        return None

    def free(self, slot: int | None) -> None:
        if slot is not None:
            self.counts[slot] = FREE

    def publish(self, slot: int, connections: int) -> None:
        self.counts[slot] = connections

    def least_loaded(self, slot: int) -> bool:
        mine = self.counts[slot]
        return all(count == FREE or mine <= count for count in self.counts)


class BalancedServer(Server):
    """uvicorn's server accepting from gunicorn's sockets itself, one connection per readiness, while its worker
    holds no more connections than any other (`ConnectionCounts.least_loaded`)."""

    def __init__(self, config, *, counts: ConnectionCounts, slot: int):
        super().__init__(config)
        self.counts, self.slot = counts, slot
        self._listening: list[socket.socket] = []
        self._deferred: dict[int, asyncio.TimerHandle] = {}
        self._looked_again: set[int] = set()
        self._connecting = 0

    def _publish(self) -> None:
        """This worker's connections, the ones still being set up included. Called on each accept and on uvicorn's
        tick (10 a second), which also sees the ones that closed."""
        self.counts.publish(self.slot, len(self.server_state.connections) + self._connecting)

    async def on_tick(self, counter: int) -> bool:
        self._publish()
        return await super().on_tick(counter)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # the lifespan and the server's state; listening is done below
        loop = asyncio.get_running_loop()
        for sock in sockets or []:
            sock.setblocking(False)
            loop.add_reader(sock.fileno(), self._accept, sock)
            self._listening.append(sock)
        self._publish()  # from now on this worker counts

    def _protocol(self):
        return self.config.http_protocol_class(config=self.config, server_state=self.server_state,
                                               app_state=self.lifespan.state, _loop=asyncio.get_running_loop())

    def _accept(self, sock: socket.socket) -> None:
        loop, fd = asyncio.get_running_loop(), sock.fileno()
        if fd not in self._looked_again and not self.counts.least_loaded(self.slot):
            self._pause(sock, DEFER_SECONDS)
            self._looked_again.add(fd)
            return
        self._looked_again.discard(fd)
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return  # another worker took it
        except OSError as exc:  # EMFILE, ENFILE, ENOBUFS, ENOMEM
            logger.error("Could not accept a connection (%s); accepting again in %gs.", exc,
                         ACCEPT_ERROR_PAUSE_SECONDS)
            self._pause(sock, ACCEPT_ERROR_PAUSE_SECONDS)
            return
        conn.setblocking(False)
        task = loop.create_task(loop.connect_accepted_socket(self._protocol, conn, ssl=self.config.ssl))
        self.server_state.tasks.add(task)
        task.add_done_callback(self._connected)
        self._connecting += 1
        self._publish()

    def _connected(self, task: asyncio.Task) -> None:
        self.server_state.tasks.discard(task)
        self._connecting -= 1
        if not task.cancelled() and task.exception() is not None:
            logger.info("A connection failed while being set up: %s", task.exception())

    def _pause(self, sock: socket.socket, seconds: float) -> None:
        loop, fd = asyncio.get_running_loop(), sock.fileno()
        loop.remove_reader(fd)
        self._deferred[fd] = loop.call_later(seconds, self._resume, sock)

    def _resume(self, sock: socket.socket) -> None:
        self._deferred.pop(sock.fileno(), None)
        asyncio.get_running_loop().add_reader(sock.fileno(), self._accept, sock)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        for sock in self._listening:  # stop accepting first, as uvicorn closes its servers first
            loop.remove_reader(sock.fileno())
        for timer in self._deferred.values():
            timer.cancel()
        self._deferred.clear()
        await super().shutdown(sockets)
