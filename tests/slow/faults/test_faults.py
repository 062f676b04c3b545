"""Faults survived: the real processes (gunicorn with a uvicorn worker, Celery worker and beat, a builder node, a
redis-server of our own, PostgreSQL behind a proxy we can cut) are broken on purpose, and the service recovers without a
restart (docs/deployment.md, "When a dependency is down").

One scratch database for the module (a fresh PostgreSQL database when DATABASE_URL is PostgreSQL, else a
SQLite file), migrated once; each test seeds its own workspace and stops every process it started. The clients
use timeouts of a few seconds as the guard against a hang; no test asserts a duration.
"""
from urllib.parse import urlsplit

import httpx
import pytest

from tests.processes import WebServer, redis_server_path, wait_until
from tests.slow.faults.stack import RECOVERY, Stack

pytestmark = pytest.mark.slow

PHONE = "+14155550123"


def platform(server: WebServer, seed: dict) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=10, headers={"Authorization": f"Bearer {seed['token']}"})


def otp(server: WebServer, seed: dict) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=10, headers={"Authorization": f"Bearer {seed['otp_key']}"})


def wait_for_status(api: httpx.Client, seed: dict, deployment_id: str, status: str, *, stack: Stack) -> dict:
    def reached():
        body = api.get(f"/v1/orgs/{seed['org']}/deployments/{deployment_id}").json()
        return body if body["status"] == status else None

    return wait_until(reached, timeout=RECOVERY, interval=0.5, what=f"{deployment_id} to be {status}",
                      logs=stack.processes)


# 1. A builder killed in the middle of a build --------------------------------------------------------------

def test_a_builder_killed_mid_build_ends_it_in_error_and_the_next_build_succeeds_on_a_fresh_one(stack, orm):
    from platform_app.models import LogLine

    redis = stack.redis() if redis_server_path() else None  # else kombu's filesystem broker in DATA_DIR
    env = stack.env(redis_url=redis.url() if redis else None)
    web = stack.web(env)
    stack.worker(env)
    builder = stack.builder(env, web, name="builder-a")
    stack.beat(env)
    seed = stack.seed(env, build="for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 1; done")
    api = platform(web, seed)
    deployments = f"/v1/orgs/{seed['org']}/projects/{seed['project']}/deployments"

    first = api.post(deployments, json={"env": "production"})
    assert first.status_code == 201, first.text
    killed = first.json()["id"]

    def building_step():
        with orm():
            return LogLine.objects.filter(deployment_id=killed, text="tick 2").exists()

    wait_until(building_step, timeout=RECOVERY, what="the build step to run", logs=stack.processes)
    builder.kill()  # SIGKILL to the builder, mid-build: its sandbox dies with it (--die-with-parent)
    stack.builder(env, web, name="builder-b")

    ended = wait_for_status(api, seed, killed, "error", stack=stack)
    assert "no heartbeat" in ended["errorMessage"]
    events = api.get(f"/v1/orgs/{seed['org']}/deployments/{killed}/events").json()["items"]
    assert [e["type"] for e in events] == ["queued", "building", "error"]
    with orm():
        ticks = set(LogLine.objects.filter(deployment_id=killed).values_list("text", flat=True))
    assert "tick 2" in ticks and "tick 8" not in ticks  # it was ended mid-build, not finished

    second = api.post(deployments, json={"env": "production"})
    assert second.status_code == 201, second.text
    ready = wait_for_status(api, seed, second.json()["id"], "ready", stack=stack)
    assert ready["errorMessage"] == ""
    with orm():
        assert LogLine.objects.filter(deployment_id=ready["id"], text="tick 8").exists()
    assert api.get(f"/v1/orgs/{seed['org']}/deployments/{killed}").json()["status"] == "error"


# 2. Redis (broker and cache) stopped and started again -----------------------------------------------------

@pytest.mark.skipif(not redis_server_path(), reason="needs redis-server: the broker and cache under test are our own")
def test_redis_down_the_api_answers_and_queued_work_is_done_when_it_is_back(stack):
    redis = stack.redis()
    env = stack.env(redis_url=redis.url())
    web = stack.web(env)
    stack.worker(env)
    stack.builder(env, web)
    stack.beat(env)
    seed = stack.seed(env, build="echo built")
    api, codes = platform(web, seed), otp(web, seed)
    deployments = f"/v1/orgs/{seed['org']}/projects/{seed['project']}/deployments"
    live = api.post(deployments, json={"env": "production"}).json()
    site = urlsplit(wait_for_status(api, seed, live["id"], "ready", stack=stack)["url"]).hostname

    redis.stop()
    page = httpx.get(web.url + "/", headers={"Host": site}, timeout=10)  # the edge's response cache is in Redis
    assert page.status_code == 200 and "<h1>It works</h1>" in page.text
    trigger = api.post(deployments, json={"env": "production"})
    assert trigger.status_code == 201, trigger.text
    assert trigger.json()["status"] == "queued"
    sent = codes.post("/api/v1/otp/send", json={"recipient": PHONE, "channel": "sms"})  # rate limited: fails open
    assert sent.status_code == 201, sent.text
    again = codes.post("/api/v1/otp/send", json={"recipient": PHONE, "channel": "sms"})
    assert again.status_code == 201, again.text
    health = httpx.get(web.url + "/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"

    redis.start()  # same port, empty: the jobs published while it was down are gone, not just delayed
    wait_for_status(api, seed, trigger.json()["id"], "ready", stack=stack)

    def delivered():
        messages = codes.get("/api/v1/sandbox/messages").json()["results"]
        found = {m["otp_id"]: m for m in messages}
        return found if {sent.json()["id"], again.json()["id"]} <= found.keys() else None

    outbox = wait_until(delivered, timeout=RECOVERY, interval=0.5, what="both codes in the sandbox outbox",
                        logs=stack.processes)
    record_id = sent.json()["id"]
    verified = codes.post("/api/v1/otp/verify", json={"id": record_id, "code": outbox[record_id]["code"]})
    assert verified.status_code == 200 and verified.json()["verified"] is True
    record = codes.get(f"/api/v1/otp/{record_id}").json()
    # the code waited in its delivery row for the sweep's wake-up: the one first sent, not a fresh one
    assert [d["status"] for d in record["delivery"]] == ["sent"]


# 3. PostgreSQL unreachable ----------------------------------------------------------------------------------

@pytest.mark.postgres
def test_postgres_unreachable_health_answers_503_and_the_service_recovers_without_a_restart(stack, scratch):
    if scratch.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): the server's connection to it is cut through a proxy")
    proxy = stack.proxy(*scratch.host_port)
    env = stack.env(database_url=scratch.url(port=proxy.port))
    seed = stack.seed(env, build="echo built")
    web = stack.web(env)
    api = platform(web, seed)
    assert httpx.get(web.url + "/health", timeout=10).status_code == 200

    proxy.stop()  # the listening socket closes and every connection is cut
    for headers in ({}, {"Authorization": api.headers["Authorization"]}):  # a credential sent along changes nothing
        down = httpx.get(web.url + "/health", headers=headers, timeout=5)
        assert down.status_code == 503
        assert down.headers["content-type"].startswith("application/json")
        assert down.json() == {"code": "database_unavailable", "message": "The database is not answering.",
                               "details": {"database": "unavailable"}, "status": 503}
    # any other route answers 503 in the platform's shape too (after the pool gives up waiting), never a 500
    route = api.get("/v1/auth/me", timeout=30)
    assert route.status_code == 503 and route.json()["code"] == "database_unavailable"

    proxy.start()  # same port
    wait_until(lambda: httpx.get(web.url + "/health", timeout=5).status_code == 200, timeout=RECOVERY,
               interval=0.5, what="/health to answer 200 again", logs=stack.processes)
    me = api.get("/v1/auth/me")
    assert me.status_code == 200 and me.json()["actingAs"]["type"] == "api_token"


# 4. The web process restarted while a client follows a log stream -------------------------------------------

def _events(lines):
    """(id, event, data) of each server-sent event; comments skipped."""
    fields = {}
    for line in lines:
        if line == "":
            if fields:
                yield fields.get("id"), fields.get("event"), fields.get("data")
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


def test_a_log_stream_resumes_after_a_web_restart_with_every_line_once_and_in_order(stack, orm):
    from django.utils import timezone

    from platform_app.models import Deployment
    from platform_app.services.deployments.deployments import log_append

    env = stack.env()
    seed = stack.seed(env, build="echo built")
    with orm():  # a build in progress, written as the worker would
        deployment = Deployment.objects.create(project_id=seed["project"], env="production", branch="main",
                                               status=Deployment.Status.BUILDING, started_at=timezone.now())

    def append(*numbers):
        with orm():
            for n in numbers:
                log_append(deployment, f"line {n}")

    append(1, 2, 3)
    web = stack.web(env)
    url = f"{web.url}/v1/orgs/{seed['org']}/deployments/{deployment.pk}/logs/stream"
    headers = {"Authorization": f"Bearer {seed['token']}"}
    timeout = httpx.Timeout(10, read=30)
    received = []

    with pytest.raises(httpx.HTTPError), httpx.stream("GET", url, headers=headers, timeout=timeout) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
        for event_id, kind, data in _events(resp.iter_lines()):
            received.append((int(event_id), data))
            if event_id == "3":
                append(4, 5)  # live lines, while connected
            if event_id == "5":
                web.kill()  # the whole gunicorn group, mid-stream
                append(6, 7, 8)  # written while no server runs

    web = stack.web(env, port=web.port, name="web-restarted")
    ended = None
    with httpx.stream("GET", url, headers={**headers, "Last-Event-ID": str(received[-1][0])},
                      timeout=timeout) as resp:
        assert resp.status_code == 200
        for event_id, kind, data in _events(resp.iter_lines()):
            if kind == "end":
                ended = data
                break
            received.append((int(event_id), data))
            if event_id == "8":
                append(9, 10)
            if event_id == "10":
                with orm():
                    Deployment.objects.filter(pk=deployment.pk).update(status=Deployment.Status.READY)

    assert received == [(n, f"line {n}") for n in range(1, 11)]
    assert ended == "ready"
