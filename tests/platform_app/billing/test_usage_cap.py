"""Usage caps through the HTTP API: a deployment (and a component deploy, a deploy hook) is refused with 402
`usage_cap_reached` once this period's spend reached the cap, and allowed again after raising it; a cap below the
spend is accepted and says deploys stop; notices at 80 % and 100 % go to owners and billing members once per
period; the `usage_cap` alert metric reads the share spent."""
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from platform_app.models import AlertRule, AuditEvent, BillingAccount, Deployment, UsageRecord
from platform_app.services.billing.meters import period_bounds
from platform_app.tasks.automation import alerts_evaluate
from platform_app.tasks.billing import usage_meter
from tests.platform_app.automation.factories import AlertRuleFactory
from tests.platform_app.billing.factories import UsageRecordFactory
from tests.platform_app.deployments.factories import DeployHookFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.factories import ComponentFactory

pytestmark = pytest.mark.django_db

CAP = "/v1/orgs/acme/billing/usage-cap"


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, slug="shop", name="Shop")


def spend(project, cents: int):
    """`cents` of build minutes (1 cent a minute) in another hour of this period."""
    start, _ = period_bounds(timezone.now())
    hour = start + timedelta(hours=UsageRecord.objects.count())
    UsageRecordFactory(project=project, hour=hour, meter="build_seconds", quantity=60 * cents)


def deploy(client, project):
    return client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments",
                       {"env": "production", "branch": "main", "trigger": "api"}, format="json")


def test_a_deployment_is_refused_at_the_cap_and_allowed_after_raising_it(alice_client, project):
    spend(project, 500)
    resp = alice_client.post(CAP, {"amount": 1000}, format="json")
    assert resp.status_code == 201
    body = resp.json()
    assert body["amount"] == 1000 and body["spendThisPeriod"] == 500 and body["percentUsed"] == 50.0
    assert body["reached"] is False and body["currency"] == "usd"
    assert deploy(alice_client, project).status_code == 201

    spend(project, 500)  # another 5.00: the spend reaches the cap
    refused = deploy(alice_client, project)
    assert refused.status_code == 402, refused.json()
    err = refused.json()
    assert err["code"] == "usage_cap_reached" and err["status"] == 402
    assert err["details"]["usageCap"] == 1000 and err["details"]["spendThisPeriod"] == 1000
    assert "10.00 USD" in err["message"] and "running instances keep serving" in err["message"]
    assert Deployment.objects.count() == 1

    assert alice_client.post(CAP, {"amount": 2000}, format="json").json()["reached"] is False
    assert deploy(alice_client, project).status_code == 201
    assert alice_client.post(CAP, {"amount": None}, format="json").json()["amount"] is None
    assert deploy(alice_client, project).status_code == 201
    assert Deployment.objects.count() == 3


def test_a_cap_below_the_spend_is_accepted_and_says_deploys_stop(alice_client, project):
    spend(project, 300)
    resp = alice_client.post(CAP, {"amount": 100}, format="json")
    assert resp.status_code == 201
    body = resp.json()
    assert body["reached"] is True and body["percentUsed"] == 300.0
    assert "refused until the cap is raised" in body["message"] and "3.00 USD" in body["message"]
    assert BillingAccount.objects.get().usage_cap == 100
    assert deploy(alice_client, project).status_code == 402
    summary = alice_client.get("/v1/orgs/acme/billing").json()
    assert summary["usageCap"] == 100 and summary["usageCapReached"] is True
    assert AuditEvent.objects.filter(action="billing.usage_cap_set").count() == 1


def test_a_zero_cap_stops_every_deploy(alice_client, project):
    assert alice_client.post(CAP, {"amount": 0}, format="json").json()["reached"] is True
    assert deploy(alice_client, project).status_code == 402


def test_component_deploys_and_deploy_hooks_are_refused_too(alice_client, api, project):
    component = ComponentFactory(project=project, name="api")
    hook = DeployHookFactory(project=project, raw="hook-secret-cap-0000000000000000")
    alice_client.post(CAP, {"amount": 0}, format="json")
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/components/{component.pk}/deploy")
    assert resp.status_code == 402 and resp.json()["code"] == "usage_cap_reached"
    resp = api.post("/v1/hooks/deploy/hook-secret-cap-0000000000000000")
    assert resp.status_code == 402 and resp.json()["code"] == "usage_cap_reached"
    assert not Deployment.objects.exists() and hook.pk


def test_scaling_up_is_refused_at_the_cap_and_scaling_down_is_not(alice_client, project, workspace):
    """More instances or a dearer size would spend more: refused like a deploy. Fewer, cheaper or the same
    settings are allowed, so a capped workspace can always shrink."""
    from platform_app.models import Component

    workspace.plan = "pro"
    workspace.save(update_fields=["plan"])
    component = ComponentFactory(project=project, name="api", instances=2, instance_size="standard")
    alice_client.post(CAP, {"amount": 0}, format="json")
    url = f"/v1/orgs/acme/projects/{project.pk}/components"
    for change in ({"instances": 3}, {"instanceSize": "pro"}, {"instances": 3, "instanceSize": "starter"}):
        resp = alice_client.patch(f"{url}/{component.pk}", change, format="json")
        assert resp.status_code == 402 and resp.json()["code"] == "usage_cap_reached", (change, resp.json())
    created = alice_client.post(url, {"name": "worker", "kind": "worker", "startCommand": "run", "instances": 2},
                                format="json")
    assert created.status_code == 402 and created.json()["code"] == "usage_cap_reached"
    component.refresh_from_db()
    assert (component.instances, component.instance_size) == (2, "standard")
    assert list(Component.objects.values_list("name", flat=True)) == ["api"]
    for change in ({"instances": 1}, {"instanceSize": "starter"}, {"startCommand": "serve --quiet"}):
        assert alice_client.patch(f"{url}/{component.pk}", change, format="json").status_code == 200, change
    static = alice_client.post(url, {"name": "site", "kind": "static"}, format="json")
    assert static.status_code == 201  # runs no instance


def test_another_workspaces_cap_does_not_stop_this_one(alice_client, as_user, charlie, project):
    assert as_user(charlie).post("/v1/orgs/charlies/billing/usage-cap", {"amount": 0}, format="json").status_code == 201
    assert deploy(alice_client, project).status_code == 201


def test_notices_at_80_and_100_percent_once_per_period(alice_client, project, betty, bob,
                                                        django_capture_on_commit_callbacks, time_machine):
    time_machine.move_to(timezone.now(), tick=True)
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(CAP, {"amount": 1000}, format="json")
    assert mail.outbox == []
    spend(project, 850)
    with django_capture_on_commit_callbacks(execute=True):
        usage_meter()
    (eighty,) = mail.outbox
    assert "80 %" in eighty.subject and sorted(eighty.to) == ["alice@example.com", "betty@example.com"]
    with django_capture_on_commit_callbacks(execute=True):
        usage_meter()  # again: nothing new
    assert len(mail.outbox) == 1
    spend(project, 200)
    with django_capture_on_commit_callbacks(execute=True):
        usage_meter()
        usage_meter()
    assert len(mail.outbox) == 2 and "Usage cap reached" in mail.outbox[1].subject
    assert "bob@example.com" not in mail.outbox[1].to  # developers manage no billing
    # the next period starts over
    _, end = period_bounds(timezone.now())
    time_machine.move_to(end + timedelta(hours=1), tick=True)
    UsageRecordFactory(project=project, hour=end, meter="build_seconds", quantity=60 * 1000)
    with django_capture_on_commit_callbacks(execute=True):
        usage_meter()
    assert len(mail.outbox) == 4


def test_the_usage_cap_alert_metric_reads_the_share_spent(alice_client, project, django_capture_on_commit_callbacks):
    rule = AlertRuleFactory(project=project, metric="usage_cap", threshold=80, channels=[
        {"type": "email", "to": ["ops@example.com"]}])
    alice_client.post(CAP, {"amount": 1000}, format="json")
    spend(project, 700)
    alerts_evaluate()
    rule.refresh_from_db()
    assert rule.last_value == 70.0 and rule.state == AlertRule.State.OK
    spend(project, 200)
    with django_capture_on_commit_callbacks(execute=True):
        assert alerts_evaluate() == 1
    rule.refresh_from_db()
    assert rule.last_value == 90.0


def test_the_dashboard_creates_no_project_while_the_cap_is_reached(alice, project, settings, tmp_path):
    """The new-project page deploys at once: at the cap it refuses before creating anything (no project, no hosted
    repository), so retrying makes no duplicates; raising the cap lets the same form through."""
    from tests.platform_app.pages.conftest import sign_in

    owner = sign_in(alice)
    spend(project, 1000)
    BillingAccount.objects.update_or_create(workspace=project.workspace, defaults={"usage_cap": 1000})
    form = {"action": "template", "t-name": "Capped", "t-template": "static-site"}
    for _ in range(2):
        resp = owner.post("/dashboard/acme/new/", form)
        assert resp.status_code == 400 and "usage cap" in resp.content.decode().lower()
    assert list(project.workspace.projects.values_list("slug", flat=True)) == ["shop"]
    assert not (settings.GIT_HOSTED_ROOT / project.workspace.pk).exists()
    BillingAccount.objects.filter(workspace=project.workspace).update(usage_cap=5000)
    resp = owner.post("/dashboard/acme/new/", form)
    assert resp.status_code == 302 and project.workspace.projects.filter(slug="capped").exists()
