"""Alert rules: each metric crossing its threshold through the real thing (a failing build, 5xx answers through
the edge, a failed cron run, an agent going silent, a misconfigured domain), exactly one notice by email (a real
SMTP server) and by signed webhook (a local server), then the resolved notice; and the internal fire route."""
import hashlib
import hmac
import json

import pytest

from platform_app.models import Alert, AlertRule, Deployment, Domain
from platform_app.tasks.agents import agents_expire
from platform_app.tasks.automation import alerts_evaluate, cron_tick
from tests.conftest import bearer_client, hosted_repo
from tests.platform_app.automation.factories import AlertRuleFactory, CronJobFactory
from tests.platform_app.deployments.test_builds import trigger
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

INTERNAL = "internal-token-" + "k" * 40


@pytest.fixture
def client(as_token, alice):
    """Alice's API token (it outlives the windows these tests travel through)."""
    return as_token(alice)


@pytest.fixture
def evaluate(django_capture_on_commit_callbacks):
    """One beat evaluation, its notices sent as a worker would once the alert rows are committed."""

    def run():
        with django_capture_on_commit_callbacks(execute=True):
            return alerts_evaluate()

    return run


def rules_url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/alerts{rest}"


def hook_url(httpserver):
    return f"http://127.0.0.1:{httpserver.port}/hook"


def add_rule(client, project, httpserver, metric, threshold, window=5, channels=None):
    channels = channels or [{"type": "email", "to": ["ops@example.com"]},
                            {"type": "webhook", "url": hook_url(httpserver)}]
    resp = client.post(rules_url(project), {"name": f"{metric} alert", "metric": metric, "threshold": threshold,
                                            "windowMinutes": window, "channels": channels}, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def hooks(httpserver, secret):
    """The webhook bodies received, each signature recomputed from the raw body."""
    bodies = []
    for request, _ in httpserver.log:
        if request.path != "/hook":
            continue  # the app's own requests (through the edge)
        raw = request.get_data()
        parts = dict(item.split("=", 1) for item in request.headers["x-svc-signature"].split(","))
        expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + raw, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(parts["v1"], expected)
        bodies.append(json.loads(raw))
    return bodies


def test_a_failing_build_fires_once_and_resolves_once(client, workspace, smtp, httpserver, travel, settings, tmp_path,
                                                       django_capture_on_commit_callbacks, evaluate):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    repo = hosted_repo(workspace, "broken", {"index.html": "<h1>x</h1>"})
    project = ProjectFactory(workspace=workspace, slug="broken", git_url=repo, build_command="echo nope && exit 3")
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    rule = add_rule(client, project, httpserver, "deployment_failed", 1, window=5)
    assert evaluate() == 0 and smtp == [] and httpserver.log == []
    trigger(client, project, django_capture_on_commit_callbacks)
    assert Deployment.objects.get().status == "error"
    assert evaluate() == 1
    assert evaluate() == 1  # still firing: no second notice
    assert len(smtp) == 1 and smtp[0]["To"] == "ops@example.com"
    assert "Alert: deployment_failed alert" in smtp[0]["Subject"]
    fired, = hooks(httpserver, rule["secret"])
    assert fired["type"] == "alert.fired" and fired["ruleId"] == rule["id"] and fired["value"] == 1
    listed = client.get(rules_url(project)).json()["items"][0]
    assert listed["state"] == "firing" and listed["openAlert"]["id"] == fired["alertId"] and listed["lastValue"] == 1
    travel(6 * 60)  # the failure leaves the window
    assert evaluate() == 0
    assert evaluate() == 0
    assert len(smtp) == 2 and "Resolved: deployment_failed alert" in smtp[1]["Subject"]
    _, resolved = hooks(httpserver, rule["secret"])
    assert resolved["type"] == "alert.resolved" and resolved["alertId"] == fired["alertId"] and resolved["resolvedAt"]
    alert = Alert.objects.get()
    assert alert.resolved_at is not None and AlertRule.objects.get().state == "ok"
    assert [(n["kind"], n["channel"], n["ok"]) for n in alert.notifications] == [
        ("fired", "email", True), ("fired", "webhook", True),
        ("resolved", "email", True), ("resolved", "webhook", True)]


def test_5xx_through_the_edge_and_latency(client, served_project, smtp, httpserver, evaluate):
    from django.test import Client

    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    httpserver.expect_request("/boom").respond_with_data("down", status=500)
    httpserver.expect_request("/").respond_with_data("home")
    rate = add_rule(client, served_project, httpserver, "edge_5xx_rate", 50)
    add_rule(client, served_project, httpserver, "edge_p95_latency", 1, channels=[{"type": "email", "to": ["a@b.co"]}])
    assert evaluate() == 0  # no traffic: nothing to measure
    visitor, host = Client(), f"{served_project.slug}.localhost"
    assert visitor.get("/", HTTP_HOST=host).status_code == 200
    assert evaluate() == 1  # 0 % 5xx, but a p95 at or above 1 ms
    assert [m["To"] for m in smtp] == ["a@b.co"]
    assert visitor.get("/boom", HTTP_HOST=host).status_code == 500
    assert visitor.get("/boom", HTTP_HOST=host).status_code == 500
    assert evaluate() == 2
    rule = AlertRule.objects.get(pk=rate["id"])
    assert rule.state == "firing" and rule.last_value == pytest.approx(66.67)
    webhooks = hooks(httpserver, rate["secret"])
    assert [b["type"] for b in webhooks] == ["alert.fired"] and webhooks[0]["metric"] == "edge_5xx_rate"
    assert len(smtp) == 2


def test_a_failed_cron_run_notifies_the_owners(client, workspace, alice, bob, smtp, httpserver, evaluate,
                                               django_capture_on_commit_callbacks, travel):
    project = ProjectFactory(workspace=workspace)  # nothing deployed: its cron runs fail
    add_rule(client, project, httpserver, "cron_failed", 1, channels=[{"type": "members", "roles": ["owner"]}])
    CronJobFactory(project=project)
    travel(60)
    with django_capture_on_commit_callbacks(execute=True):
        cron_tick()
    assert evaluate() == 1
    assert len(smtp) == 1 and smtp[0]["To"] == alice.email


def test_an_agent_going_silent_fires_and_its_return_resolves(client, served_project, smtp, httpserver, settings,
                                                             api, travel, evaluate):
    add_rule(client, served_project, httpserver, "instance_down", 1, channels=[{"type": "email", "to": ["o@x.io"]}])
    assert evaluate() == 0
    travel(settings.AGENT_HEARTBEAT_TIMEOUT_SECONDS + 5)
    assert agents_expire() == 1
    assert evaluate() == 1 and len(smtp) == 1
    instance = served_project.production_deployment.instances.get()
    resp = api.post(f"/v1/agents/{instance.node_id}/heartbeat",
                    {"instances": [{"instanceId": instance.pk, "status": "running", "port": httpserver.port}]},
                    format="json", HTTP_AUTHORIZATION="Bearer agn_automation_node")
    assert resp.status_code == 200
    assert evaluate() == 0
    assert len(smtp) == 2 and "Resolved" in smtp[1]["Subject"]


def test_a_misconfigured_domain(client, workspace, smtp, httpserver, evaluate):
    project = ProjectFactory(workspace=workspace)
    add_rule(client, project, httpserver, "domain_misconfigured", 1, channels=[{"type": "email", "to": ["d@x.io"]}])
    Domain.objects.create(project=project, name="shop.example.com", verification_token="t" * 32,
                          status="misconfigured")
    assert evaluate() == 1 and len(smtp) == 1


def test_usage_cap_measures_nothing_without_a_cap(client, workspace, httpserver, evaluate):
    """With a cap it measures the share spent (tests/platform_app/billing/test_usage_cap.py)."""
    project = ProjectFactory(workspace=workspace)
    add_rule(client, project, httpserver, "usage_cap", 80)
    assert evaluate() == 0
    rule = AlertRule.objects.get()
    assert rule.last_value is None and rule.last_evaluated_at is not None


@pytest.mark.parametrize("change", [
    {"metric": "cpu"}, {"threshold": -1}, {"metric": "edge_5xx_rate", "threshold": 150},
    {"threshold": 1.5}, {"threshold": "high"}, {"windowMinutes": 0}, {"channels": []},
    {"channels": [{"type": "email", "to": ["not-an-address"]}]}, {"channels": [{"type": "sms", "to": ["+1555"]}]},
    {"channels": [{"type": "webhook", "url": "https://10.1.2.3/hook"}]},
    {"channels": [{"type": "members", "roles": ["king"]}]}, {"channels": [{"type": "members", "roles": [["owner"]]}]},
    {"channels": [{"type": "email", "to": [{"a": 1}]}]}, {"channels": [{"type": ["email"]}]},
    {"channels": [{"type": "webhook", "url": 5}]},
])
def test_bad_rules_are_400(client, workspace, change, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    project = ProjectFactory(workspace=workspace)
    body = {"name": "x", "metric": "deployment_failed", "threshold": 1, "windowMinutes": 5,
            "channels": [{"type": "email", "to": ["ops@example.com"]}], **change}
    resp = client.post(rules_url(project), body, format="json")
    assert resp.status_code == 400, resp.json()
    assert not AlertRule.objects.exists()


def test_unknown_metric_names_the_choices(client, workspace):
    project = ProjectFactory(workspace=workspace)
    resp = client.post(rules_url(project), {"name": "x", "metric": "cpu", "threshold": 1,
                                            "channels": [{"type": "email", "to": ["o@x.io"]}]}, format="json")
    assert resp.json()["code"] == "unknown_metric" and "deployment_failed" in resp.json()["details"]["metric"][0]


def test_developers_read_rules_but_do_not_change_them(as_user, bob, workspace):
    project = ProjectFactory(workspace=workspace)
    rule = AlertRuleFactory(project=project)
    client = as_user(bob)
    assert client.get(rules_url(project)).json()["items"][0]["id"] == rule.pk
    assert client.delete(rules_url(project, f"/{rule.pk}")).status_code == 403
    assert AlertRule.objects.exists()


def test_delete(client, workspace):
    project = ProjectFactory(workspace=workspace)
    rule = AlertRuleFactory(project=project)
    assert client.delete(rules_url(project, f"/{rule.pk}")).json() == {"deleted": True}
    assert not AlertRule.objects.exists()
    assert client.delete(rules_url(project, f"/{rule.pk}")).status_code == 404


# The internal fire route ---------------------------------------------------------------------------

def fire_url(rule_id):
    return f"/v1/internal/alerts/{rule_id}/fire"


def test_only_the_internal_token_fires(settings, api, as_user, as_token, alice, workspace):
    settings.INTERNAL_API_TOKEN = INTERNAL
    rule = AlertRuleFactory(project=ProjectFactory(workspace=workspace))
    for caller in (api, as_user(alice), as_token(alice), bearer_client("internal-token-wrong")):
        resp = caller.post(fire_url(rule.pk), {}, format="json")
        assert resp.status_code == 401 and resp.json()["status"] == 401
    assert bearer_client(INTERNAL).post(fire_url("alr_unknown"), {}, format="json").status_code == 404
    settings.INTERNAL_API_TOKEN = ""  # not configured: nothing opens it
    assert bearer_client("").post(fire_url(rule.pk), {}, format="json").status_code == 401
    assert not Alert.objects.exists()


def test_fire_opens_one_alert_and_notifies_once(settings, workspace, smtp, travel, django_capture_on_commit_callbacks,
                                                evaluate):
    settings.INTERNAL_API_TOKEN = INTERNAL
    rule = AlertRuleFactory(project=ProjectFactory(workspace=workspace), window_minutes=10,
                            channels=[{"type": "email", "to": ["oncall@example.com"]}])
    internal = bearer_client(INTERNAL)
    with django_capture_on_commit_callbacks(execute=True):
        first = internal.post(fire_url(rule.pk), {"message": "disk 95%", "value": 95}, format="json")
        again = internal.post(fire_url(rule.pk), {}, format="json")
    assert first.status_code == 200 and first.json()["fired"] is True
    assert again.json() == {"fired": False, "alertId": first.json()["alertId"]}
    assert len(smtp) == 1 and "disk 95%" in smtp[0].get_payload()
    assert bearer_client(INTERNAL).post(fire_url(rule.pk), {"value": "x"}, format="json").status_code == 400
    assert evaluate() == 1  # under the threshold, but a fired alert stays open one window
    travel(11 * 60)
    assert evaluate() == 0
    assert Alert.objects.get().resolved_at is not None and len(smtp) == 2


def test_a_slow_build_fires_build_duration(client, workspace, smtp, httpserver, evaluate):
    from datetime import timedelta

    from django.utils import timezone

    project = ProjectFactory(workspace=workspace)
    add_rule(client, project, httpserver, "build_duration", 600, channels=[{"type": "email", "to": ["b@x.io"]}])
    now = timezone.now()
    Deployment.objects.create(project=project, branch="main", status=Deployment.Status.READY,
                              started_at=now - timedelta(minutes=3), finished_at=now - timedelta(minutes=1))
    assert evaluate() == 0 and AlertRule.objects.get().last_value == 120
    Deployment.objects.create(project=project, branch="main", status=Deployment.Status.READY,
                              started_at=now - timedelta(minutes=12), finished_at=now)
    assert evaluate() == 1 and AlertRule.objects.get().last_value == 720 and len(smtp) == 1


def test_the_edge_serves_while_the_metrics_cache_is_down(served_project, httpserver, redis_down):
    from django.test import Client

    httpserver.expect_request("/").respond_with_data("home")
    resp = Client().get("/", HTTP_HOST=f"{served_project.slug}.localhost")
    assert resp.status_code == 200 and resp.content == b"home"


@pytest.mark.parametrize("metric", ["deployment_failed", "cron_failed", "domain_misconfigured", "instance_down"])
def test_a_count_metric_without_threshold_fires_from_1(client, workspace, metric):
    project = ProjectFactory(workspace=workspace)
    resp = client.post(rules_url(project), {"name": "x", "metric": metric,
                                            "channels": [{"type": "email", "to": ["o@x.io"]}]}, format="json")
    assert resp.status_code == 201 and resp.json()["threshold"] == 1
    assert AlertRule.objects.get().threshold == 1


@pytest.mark.parametrize("threshold", ["absent", None])
def test_other_metrics_need_a_threshold(client, workspace, threshold):
    project = ProjectFactory(workspace=workspace)
    body = {"name": "x", "metric": "edge_p95_latency", "channels": [{"type": "email", "to": ["o@x.io"]}]}
    if threshold != "absent":
        body["threshold"] = threshold
    resp = client.post(rules_url(project), body, format="json")
    assert resp.status_code == 400 and list(resp.json()["details"]) == ["threshold"]
    assert not AlertRule.objects.exists()
