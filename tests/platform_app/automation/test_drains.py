"""Log drains against a local HTTP server: signed batches in both formats, a real build's log in order,
retries with backoff, pausing, the test route, and addresses refused by the outbound guard."""
import hashlib
import hmac
import json

import pytest
from werkzeug import Response

from config.outbound import UNREACHABLE
from platform_app.models import Deployment, LogDrain, LogDrainDelivery, LogLine
from platform_app.tasks.automation import drains_deliver
from tests.conftest import hosted_repo
from tests.platform_app.deployments.factories import DeploymentFactory, LogLineFactory
from tests.platform_app.deployments.test_builds import trigger
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Logs")


def url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/log-drains{rest}"


def endpoint(httpserver, path="/in"):
    # the guard refuses the name `localhost`; the test settings open 127.0.0.0/8 over http
    return f"http://127.0.0.1:{httpserver.port}{path}"


def create(client, project, httpserver, **body):
    body = {"url": endpoint(httpserver), "sources": ["build"], **body}
    return client.post(url(project), body, format="json")


def verify(secret: str, request) -> bytes:
    """What a receiver does with `x-svc-signature: t=<unix>,v1=<hex>`: recompute from the raw body."""
    raw = request.get_data()
    parts = dict(item.split("=", 1) for item in request.headers["x-svc-signature"].split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + raw, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected)
    return raw


def deliver(travel=None, seconds=0):
    if travel and seconds:
        travel(seconds)
    return drains_deliver()


def test_create_checks_and_shows_the_secret_once(alice_client, project, httpserver):
    resp = create(alice_client, project, httpserver, format="ndjson", environments=["production"], samplingRate=0.5)
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["secret"].startswith("svcs_") and body["status"] == "active" and body["samplingRate"] == 0.5
    assert body["format"] == "ndjson" and body["environments"] == ["production"] and body["lastError"] == ""
    listed = alice_client.get(url(project)).json()["items"]
    assert [d["id"] for d in listed] == [body["id"]] and "secret" not in listed[0]


@pytest.mark.parametrize("body", [
    {"sources": ["kernel"]}, {"sources": []}, {"format": "xml"}, {"samplingRate": 0}, {"samplingRate": 1.5},
    {"url": "ftp://logs.example.com/x"}, {"environments": [""]},
])
def test_bad_input_is_400(alice_client, project, httpserver, body):
    resp = create(alice_client, project, httpserver, **body)
    assert resp.status_code == 400, resp.json()
    assert not LogDrain.objects.exists()


@pytest.mark.parametrize("address", ["https://10.0.0.7/in", "https://169.254.169.254/latest", "https://[::1]/in",
                                     "https://localhost/in"])
def test_internal_addresses_get_the_generic_400(alice_client, project, httpserver, address, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    resp = create(alice_client, project, httpserver, url=address)
    assert resp.status_code == 400 and resp.json()["message"] == UNREACHABLE
    assert not LogDrain.objects.exists()


def test_plain_http_is_refused_where_only_https_is_allowed(alice_client, project, httpserver, settings):
    settings.OUTBOUND_ALLOW_HTTP = False
    resp = create(alice_client, project, httpserver)
    assert resp.status_code == 400 and resp.json()["message"] == UNREACHABLE


def test_developers_cannot_add_or_test(as_user, bob, project, httpserver):
    client = as_user(bob)
    assert client.get(url(project)).status_code == 200
    assert create(client, project, httpserver).status_code == 403
    assert not LogDrain.objects.exists()


def test_a_build_log_arrives_whole_in_order_and_signed(alice_client, workspace, httpserver, settings, tmp_path,
                                                       django_capture_on_commit_callbacks, travel):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    repo = hosted_repo(workspace, "site", {"src/index.html": "<h1>hi</h1>"})
    project = ProjectFactory(workspace=workspace, slug="drained", git_url=repo, output_directory="out",
                             build_command="mkdir -p out && cp -r src/. out/ && "
                                           "for i in 1 2 3 4 5; do echo step $i; done")
    secret = create(alice_client, project, httpserver).json()["secret"]
    httpserver.expect_request("/in", method="POST").respond_with_data("ok")
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    deployment = Deployment.objects.get()
    assert deployment.status == "ready"
    assert httpserver.log == []  # the build itself never calls the drain
    assert deliver(travel, 10) == 1
    (request, response), = httpserver.log
    assert request.headers["Content-Type"] == "application/json" and response.status_code == 200
    entries = json.loads(verify(secret, request))
    expected = list(LogLine.objects.filter(deployment=deployment).order_by("seq").values_list("text", flat=True))
    assert [e["message"] for e in entries] == expected and "step 5" in expected
    assert {e["source"] for e in entries} == {"build"} and entries[0]["deploymentId"] == deployment.pk
    assert entries[0]["environment"] == "production"
    drain = LogDrain.objects.get()
    assert drain.build_cursor == LogLine.objects.order_by("-pk").first().pk and drain.last_delivery_at is not None
    deliver(travel, 10)
    assert len(httpserver.log) == 1  # nothing new: nothing sent


def test_ndjson_batches_by_count_then_by_time(alice_client, project, httpserver, settings, travel):
    settings.DRAIN_BATCH_MAX_LINES = 3
    secret = create(alice_client, project, httpserver, format="ndjson").json()["secret"]
    deployment = DeploymentFactory(project=project, env="production")
    lines = [LogLineFactory(deployment=deployment, seq=i, text=f"line {i}") for i in range(1, 8)]
    httpserver.expect_request("/in").respond_with_data("ok")
    deliver()
    assert len(httpserver.log) == 2  # two full batches at once; the seventh line waits for the interval
    deliver(travel, 2)
    assert len(httpserver.log) == 2
    deliver(travel, 5)
    assert len(httpserver.log) == 3
    bodies = [verify(secret, request) for request, _ in httpserver.log]
    assert all(request.headers["Content-Type"] == "application/x-ndjson" for request, _ in httpserver.log)
    received = [json.loads(row)["message"] for body in bodies for row in body.decode().splitlines()]
    assert received == [line.text for line in lines]
    assert [len(body.decode().splitlines()) for body in bodies] == [3, 3, 1]


def test_environment_filter_and_runtime_lines(alice_client, project, httpserver, travel):
    from tests.platform_app.deployments.factories import RuntimeLogLineFactory

    create(alice_client, project, httpserver, sources=["build", "runtime", "edge"], environments=["production"])
    production = DeploymentFactory(project=project, env="production")
    preview = DeploymentFactory(project=project, env="preview")
    LogLineFactory(deployment=preview, text="preview build")
    LogLineFactory(deployment=production, text="production build")
    RuntimeLogLineFactory(deployment=production, text="listening on 3000")
    RuntimeLogLineFactory(deployment=preview, text="preview runtime")
    httpserver.expect_request("/in").respond_with_data("ok")
    deliver(travel, 10)
    entries = json.loads(httpserver.log[0][0].get_data())
    assert [(e["source"], e["message"]) for e in entries] == [("build", "production build"),
                                                              ("runtime", "listening on 3000")]


def test_failures_back_off_then_the_batch_is_delivered(alice_client, project, httpserver, travel):
    create(alice_client, project, httpserver)
    LogLineFactory(deployment=DeploymentFactory(project=project), text="important")
    answers = iter([500, 502, 200])
    httpserver.expect_request("/in").respond_with_handler(lambda request: Response("", status=next(answers)))
    deliver(travel, 10)
    drain = LogDrain.objects.get()
    assert drain.failures == 1 and drain.last_error == "The endpoint answered 500." and drain.build_cursor == 0
    deliver(travel, 4)  # the first backoff is 5 s
    assert len(httpserver.log) == 1
    deliver(travel, 1)
    assert len(httpserver.log) == 2 and LogDrain.objects.get().failures == 2
    deliver(travel, 9)  # then 10 s
    assert len(httpserver.log) == 2
    deliver(travel, 1)
    assert len(httpserver.log) == 3
    drain = LogDrain.objects.get()
    assert drain.failures == 0 and drain.last_error == "" and drain.build_cursor > 0
    bodies = [json.loads(request.get_data())[0]["message"] for request, _ in httpserver.log]
    assert bodies == ["important"] * 3  # the same batch each time
    assert list(LogDrainDelivery.objects.order_by("pk").values_list("delivered", flat=True)) == [False, False, True]


def test_a_drain_that_keeps_failing_is_paused_and_a_test_resumes_it(as_token, alice, project, httpserver, travel,
                                                                    settings):
    settings.DRAIN_PAUSE_AFTER_FAILURES = 3
    alice_client = as_token(alice)  # an API token outlives the hour this test travels
    secret = create(alice_client, project, httpserver).json()["secret"]
    drain_id = LogDrain.objects.get().pk
    LogLineFactory(deployment=DeploymentFactory(project=project), text="lost?")
    httpserver.expect_request("/in").respond_with_response(Response("", status=503))
    for _ in range(3):
        deliver(travel, 60)
    body = alice_client.get(url(project)).json()["items"][0]
    assert body["status"] == "paused" and "3 failed deliveries" in body["lastError"] and "503" in body["lastError"]
    deliver(travel, 3600)
    assert len(httpserver.log) == 3  # paused: nothing more is attempted
    httpserver.clear()
    httpserver.expect_request("/in").respond_with_data("ok")
    resp = alice_client.post(url(project, f"/{drain_id}/test"), format="json")
    assert resp.status_code == 201
    result = resp.json()
    assert result["delivered"] is True and result["statusCode"] == 200 and result["error"] is None
    assert isinstance(result["durationMs"], int)
    (request, _), = httpserver.log
    assert json.loads(verify(secret, request))[0]["source"] == "test"
    assert LogDrain.objects.get().status == "active"
    deliver(travel, 10)
    assert json.loads(httpserver.log[-1][0].get_data())[0]["message"] == "lost?"  # nothing was skipped


def test_the_test_route_reports_a_failure(alice_client, project, httpserver):
    drain_id = create(alice_client, project, httpserver).json()["id"]
    httpserver.expect_request("/in").respond_with_response(Response("nope", status=404))
    result = alice_client.post(url(project, f"/{drain_id}/test"), format="json").json()
    assert result["delivered"] is False and result["statusCode"] == 404
    assert result["error"] == "The endpoint answered 404."
    assert LogDrainDelivery.objects.get().test is True


def test_delete(alice_client, project, httpserver):
    drain_id = create(alice_client, project, httpserver).json()["id"]
    assert alice_client.delete(url(project, f"/{drain_id}")).json() == {"deleted": True}
    assert not LogDrain.objects.exists()
    assert alice_client.delete(url(project, f"/{drain_id}")).status_code == 404


def test_firewall_events_are_delivered_whatever_the_environment_filter(alice_client, project, httpserver, travel):
    from platform_app.models import FirewallEvent

    FirewallEvent.objects.create(project=project, rule_id="fw_old", action="deny", ip="203.0.113.9", method="GET",
                                 path="/before")  # before the drain existed: not sent
    create(alice_client, project, httpserver, sources=["firewall"], environments=["production"])
    FirewallEvent.objects.create(project=project, rule_id="fw_1", action="deny", ip="203.0.113.7", method="POST",
                                 path="/wp-login.php", user_agent="scanner")
    httpserver.expect_request("/in").respond_with_data("ok")
    deliver(travel, 10)
    entry, = json.loads(httpserver.log[0][0].get_data())
    assert entry["source"] == "firewall" and entry["path"] == "/wp-login.php" and entry["action"] == "deny"
    assert entry["message"] == "deny POST /wp-login.php from 203.0.113.7" and entry["ruleId"] == "fw_1"
