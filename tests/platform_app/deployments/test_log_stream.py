"""The live log stream (server-sent events): resume with Last-Event-ID without losing or repeating a line, over
the test client (the async body driven synchronously) and through the ASGI application the server runs."""
import asyncio
import json
import os
import time

import pytest

from platform_app.models import Deployment, LogLine
from platform_app.services.identity.auth import session_start
from platform_app.services.deployments.deployments import log_append, log_channel
from tests.conftest import closing
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body

URL = "/v1/orgs/acme/deployments/{}/logs/stream"


@pytest.fixture
def deployment(workspace):
    project = ProjectFactory(workspace=workspace, name="Site", slug="site",
                             git_url="https://git.example.com/site.git")
    return DeploymentFactory(project=project, env="preview", branch="main", status="building")


def events(text: str) -> list[tuple[str, str, str]]:
    """(id, event, data) of each event in an SSE body; comments (`: ...`) are not events."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if fields:
            found.append((fields.get("id", ""), fields.get("event", ""), fields.get("data", "")))
    return found


def log_ids(text: str) -> list[int]:
    return [int(i) for i, kind, _ in events(text) if kind == "log"]


def append(deployment, first: int, last: int) -> None:
    for n in range(first, last + 1):
        log_append(deployment, f"line {n}\nwith a second row")


def test_resume_after_last_event_id_replays_only_the_later_lines(alice_client, deployment):
    append(deployment, 1, 7)
    Deployment.objects.filter(pk=deployment.pk).update(status="ready")

    resp = alice_client.get(URL.format(deployment.pk), HTTP_LAST_EVENT_ID="3")
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    assert resp["Cache-Control"] == "no-cache" and resp["X-Accel-Buffering"] == "no"
    text = sse_body(resp).decode()
    assert text.startswith(": stream open\n\n")
    assert events(text) == [(str(n), "log", f"line {n} with a second row") for n in range(4, 8)] + [
        ("", "end", "ready")]

    by_query = sse_body(alice_client.get(URL.format(deployment.pk) + "?lastEventId=5")).decode()
    assert log_ids(by_query) == [6, 7] and events(by_query)[-1] == ("", "end", "ready")
    everything = sse_body(alice_client.get(URL.format(deployment.pk))).decode()
    assert log_ids(everything) == list(range(1, 8))
    assert LogLine.objects.filter(deployment=deployment).count() == 7  # reading never writes


def test_browser_event_source_accept_header_is_served(alice, api, as_user, charlie, deployment):
    """EventSource sends `Accept: text/event-stream`: the stream answers it; errors still answer JSON."""
    append(deployment, 1, 2)
    Deployment.objects.filter(pk=deployment.pk).update(status="error")
    token = as_user(alice).post("/v1/auth/ws-token").json()["token"]
    resp = api.get(URL.format(deployment.pk) + f"?token={token}", HTTP_ACCEPT="text/event-stream")
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    assert events(sse_body(resp).decode())[-1] == ("", "end", "error")

    anonymous = api.get(URL.format(deployment.pk), HTTP_ACCEPT="text/event-stream")
    assert anonymous.status_code == 401 and anonymous["Content-Type"].startswith("application/json")
    outsider = as_user(charlie).get(URL.format(deployment.pk), HTTP_ACCEPT="text/event-stream")
    assert outsider.status_code == 404 and outsider.json()["code"] == "not_found"


def test_live_stream_cut_then_resumed_loses_and_repeats_nothing(transactional_db, alice, as_user, deployment):
    """Lines arrive while the client reads; the client drops mid-stream and comes back with Last-Event-ID:
    together the two streams hold every line exactly once. (Transactional: hanging up finishes the request,
    which gives the database connection back.)"""
    client = as_user(alice)
    append(deployment, 1, 2)
    first = client.get(URL.format(deployment.pk))
    chunks = iter(first.streaming_content)
    seen = ""
    while log_ids(seen)[-1:] != [2]:
        seen += next(chunks).decode()
    append(deployment, 3, 8)  # the build goes on while the stream is open
    while 5 not in log_ids(seen):
        seen += next(chunks).decode()
    first.close()  # the client goes away mid-stream
    resume_at = log_ids(seen)[-1]

    append(deployment, 9, 12)
    Deployment.objects.filter(pk=deployment.pk).update(status="ready")
    second = client.get(URL.format(deployment.pk), HTTP_LAST_EVENT_ID=str(resume_at))
    rest = sse_body(second).decode()
    assert log_ids(seen) + log_ids(rest) == list(range(1, 13))
    assert events(rest)[-1] == ("", "end", "ready")


# Through config.asgi.application, as gunicorn's uvicorn workers run it ---------------------------------------

class AsgiStream:
    """One GET through the ASGI application, read message by message, cut by a client disconnect."""

    def __init__(self, path: str, headers: dict):
        from config.asgi import application

        path, _, query = path.partition("?")
        headers = [(b"host", b"testserver")] + [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "", "client": ("127.0.0.1", 40000), "server": ("testserver", 80), "headers": headers}
        self.messages: asyncio.Queue = asyncio.Queue()
        self.gone = asyncio.Event()
        self.requested = False
        self.text = ""
        self.log_writes = 0  # body messages carrying log events
        self.task = asyncio.ensure_future(application(scope, self.receive, self.messages.put))

    async def receive(self):
        if not self.requested:
            self.requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def start(self) -> dict:
        message = await asyncio.wait_for(self.messages.get(), 30)
        assert message["type"] == "http.response.start"
        return {"status": message["status"], **{k.decode().lower(): v.decode() for k, v in message["headers"]}}

    async def read_until(self, done) -> str:
        """Body until `done(text)` or the end of the response."""
        while not done(self.text):
            message = await asyncio.wait_for(self.messages.get(), 30)
            self.text += message.get("body", b"").decode()
            self.log_writes += b"event: log" in message.get("body", b"")
            if not message.get("more_body"):
                break
        return self.text

    async def disconnect(self) -> None:
        self.gone.set()
        await asyncio.wait_for(self.task, 30)


def in_thread(fn, *args, **kwargs):
    """`fn` on a helper thread (a writer next to the server), closing that thread's connection after."""
    from asgiref.sync import sync_to_async

    return sync_to_async(closing(fn), thread_sensitive=False)(*args, **kwargs)


async def wait_for(predicate, what: str):
    deadline = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def test_asgi_stream_holds_no_request_thread_and_resumes_exactly(transactional_db, alice, deployment):
    headers = {"Authorization": f"Bearer {session_start(user=alice).access_token}"}
    append(deployment, 1, 3)

    from config.asgi import request_threads_in_use

    async def main():
        first = AsgiStream(URL.format(deployment.pk), headers)
        head = await first.start()
        assert head["status"] == 200 and head["content-type"] == "text/event-stream"
        await first.read_until(lambda text: log_ids(text)[-1:] == [3])
        # open and waiting: the view's thread (and its database connection) went back at once
        await wait_for(lambda: request_threads_in_use() == 0, "an open stream still holds its request thread")
        await in_thread(append, deployment, 4, 6)
        seen = await first.read_until(lambda text: 5 in log_ids(text))
        await first.disconnect()
        resume_at = log_ids(seen)[-1]

        second = AsgiStream(URL.format(deployment.pk), {**headers, "Last-Event-ID": str(resume_at)})
        assert (await second.start())["status"] == 200
        await in_thread(append, deployment, 7, 9)
        await in_thread(Deployment.objects.filter(pk=deployment.pk).update, status="ready")
        rest = await second.read_until(lambda text: "event: end" in text)
        await second.disconnect()
        return seen, rest

    seen, rest = asyncio.run(main())
    assert log_ids(seen) + log_ids(rest) == list(range(1, 10))
    assert events(rest)[-1] == ("", "end", "ready")
    assert "data: line 4 with a second row" in seen


def test_a_user_holds_at_most_their_streams_per_process_whatever_the_credential(transactional_db, alice, bob,
                                                                               deployment, settings):
    """Open streams fill a worker's memory and sockets: a user's count in the process is bounded, across their
    credentials; the next one is 429 in the error shape, and a stream that ended gives its place back."""
    settings.EVENT_STREAMS_PER_USER = 2
    alice_headers = [{"Authorization": f"Bearer {session_start(user=alice).access_token}"} for _ in range(2)]
    bob_headers = {"Authorization": f"Bearer {session_start(user=bob).access_token}"}

    async def main():
        open_ = [AsgiStream(URL.format(deployment.pk), headers) for headers in alice_headers]
        for stream in open_:
            assert (await stream.start())["status"] == 200
        refused = AsgiStream(URL.format(deployment.pk), alice_headers[1])
        head = await refused.start()
        assert head["status"] == 429 and head["retry-after"] == "10"
        body = json.loads(await refused.read_until(lambda text: False))
        assert body["code"] == "too_many_streams" and body["status"] == 429
        other = AsgiStream(URL.format(deployment.pk), bob_headers)  # another user's streams are theirs
        assert (await other.start())["status"] == 200
        await open_[0].disconnect()
        again = AsgiStream(URL.format(deployment.pk), alice_headers[0])
        assert (await again.start())["status"] == 200
        await in_thread(Deployment.objects.filter(pk=deployment.pk).update, status="ready")
        for stream in (open_[1], other, again):
            assert events(await stream.read_until(lambda text: "event: end" in text))[-1] == ("", "end", "ready")
            await stream.disconnect()

    asyncio.run(main())
    from config.event_streams import streams_open

    assert streams_open(alice.pk) == streams_open(bob.pk) == 0  # every stream gave its place back


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it): without it streams poll")
def test_a_process_with_many_streams_batches_their_lines_into_fewer_writes(transactional_db, alice, deployment,
                                                                           settings):
    """Three streams against a budget of 15 wake-ups a second: the process wakes them at ticks 0.2 s apart, so
    lines appended every 20 ms reach every stream whole and once each, several to a write."""
    settings.STREAM_WAKES_PER_SECOND = 15
    headers = {"Authorization": f"Bearer {session_start(user=alice).access_token}"}

    async def main():
        streams = [AsgiStream(URL.format(deployment.pk), headers) for _ in range(3)]
        for stream in streams:
            assert (await stream.start())["status"] == 200
        await asyncio.gather(*(s.read_until(lambda text: "stream open" in text) for s in streams))
        started = time.monotonic()
        for n in range(1, 31):
            await in_thread(log_append, deployment, f"line {n}")
            await asyncio.sleep(0.02)
        await asyncio.gather(*(s.read_until(lambda text: 30 in log_ids(text)) for s in streams))
        elapsed = time.monotonic() - started
        await in_thread(Deployment.objects.filter(pk=deployment.pk).update, status="ready")
        await asyncio.gather(*(s.read_until(lambda text: "event: end" in text) for s in streams))
        return streams, elapsed

    streams, elapsed = asyncio.run(main())
    for stream in streams:
        assert log_ids(stream.text) == list(range(1, 31))
        assert stream.log_writes <= min(elapsed / 0.2 + 2, 15), (stream.log_writes, elapsed)


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it)")
def test_hub_shares_one_redis_subscription_between_local_streams(transactional_db, deployment):
    """Two local subscribers of a channel: one Redis subscription; a log line wakes both; after the last one
    leaves, the process no longer subscribes."""
    import redis

    from platform_app.services.channel_hub import channel_hub, channel_hub_close

    channel = log_channel(deployment.pk)
    client = redis.Redis.from_url(os.environ["REDIS_URL"])

    def subscribers() -> int:
        return dict(client.pubsub_numsub(channel))[channel.encode()]

    async def main():
        hub = channel_hub()
        a, b = await hub.subscribe(channel), await hub.subscribe(channel)
        await wait_for(lambda: hub.healthy, "the hub never connected")
        await wait_for(lambda: subscribers() == 1, "no Redis subscription")
        await a.wait(0), await b.wait(0)  # drop the wake-up that follows connecting
        await in_thread(log_append, deployment, "hello")
        woken = [await a.wait(20), await b.wait(20)]
        await a.close()
        still = subscribers()
        await b.close()
        await wait_for(lambda: subscribers() == 0, "the subscription outlived its last stream")
        await channel_hub_close()
        return woken, still

    woken, still = asyncio.run(main())
    assert woken == [True, True] and still == 1
    assert LogLine.objects.get(deployment=deployment).text == "hello"


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it)")
def test_a_hub_wait_times_out_on_its_own_deadline_whatever_waits_shared_its_timer(transactional_db, deployment):
    """Waits due at about the same moment share one timer: a wait woken by a message, then waiting again for
    longer, is not ended by its first deadline's timer; fifty waits due together all time out, none early."""
    import redis

    from platform_app.services.channel_hub import channel_hub, channel_hub_close

    channel = log_channel(deployment.pk)

    async def main():
        hub = channel_hub()
        subs = [await hub.subscribe(channel)]
        subs += [await hub.subscribe("quiet") for _ in range(49)]  # no message comes on this one
        await wait_for(lambda: hub.healthy, "the hub never connected")
        for sub in subs:
            await sub.wait(0)  # drop the wake-up that follows connecting
        first = asyncio.ensure_future(subs[0].wait(2.0))
        await asyncio.sleep(0.05)
        await asyncio.to_thread(redis.Redis.from_url(os.environ["REDIS_URL"]).publish, channel, "1")
        woken = await first
        started = time.monotonic()
        results = await asyncio.gather(subs[0].wait(3.0), *(sub.wait(1.0) for sub in subs[1:]))
        waited = time.monotonic() - started
        for sub in subs:
            await sub.close()
        await channel_hub_close()
        return woken, results, waited

    woken, results, waited = asyncio.run(main())
    assert woken is True
    assert results == [False] * 50 and waited >= 3.0


def test_streams_of_one_credential_share_each_recheck_and_end_together(transactional_db, deployment):
    """Five open streams of one reader check its access once per period between them, not once each; when the
    check says access is gone, every one of them ends with `revoked`."""
    from platform_app.services.deployments.log_stream import log_stream_events

    checks, verdict = [], [None]

    def access_lost():
        checks.append(time.monotonic())
        return verdict[0]

    async def read(stream, into: list):
        async for chunk in stream:
            into.append(chunk.decode())

    async def main():
        received = [[] for _ in range(5)]
        streams = [log_stream_events(deployment_id=deployment.pk, poll=0.05, access_lost=access_lost,
                                     access_key=("credential", "workspace"), recheck=0.25) for _ in range(5)]
        readers = [asyncio.ensure_future(read(s, into)) for s, into in zip(streams, received)]
        started = time.monotonic()
        for n in range(1, 9):  # about 1.2 s: four or five periods of 0.25 s
            await in_thread(log_append, deployment, f"line {n}")
            await asyncio.sleep(0.15)
        periods = (time.monotonic() - started) / 0.25
        shared = len(checks)
        for _ in range(200):  # every stream has read the last line (a loaded machine may be slower than 0.15 s)
            if all("line 8" in "".join(into) for into in received):
                break
            await asyncio.sleep(0.05)
        verdict[0] = "token_revoked"
        await asyncio.wait_for(asyncio.gather(*readers), 20)
        return received, shared, periods

    received, shared, periods = asyncio.run(main())
    assert 1 <= shared <= periods + 2  # unshared, five streams would have made about five times as many
    for chunks in received:
        text = "".join(chunks)
        assert log_ids(text) == list(range(1, 9))
        assert events(text)[-1] == ("", "revoked", "token_revoked")


def test_a_stream_that_goes_away_mid_read_leaves_the_shared_read_to_the_others():
    """Streams asking for the same lines at once share one read; one of them cancelled while it runs (its client
    left) cancels only its own wait."""
    from platform_app.services.deployments.log_stream import shared_read

    reads = []

    async def read():
        reads.append(1)
        await asyncio.sleep(0.1)
        return "lines"

    async def main():
        waiters = [asyncio.ensure_future(shared_read("same", read)) for _ in range(3)]
        await asyncio.sleep(0.02)
        waiters[0].cancel()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        again = await shared_read("same", read)  # the finished read is not kept: a later ask reads again
        return results, again

    results, again = asyncio.run(main())
    assert isinstance(results[0], asyncio.CancelledError) and results[1:] == ["lines", "lines"]
    assert again == "lines" and len(reads) == 2
