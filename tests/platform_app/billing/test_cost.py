"""Cost through the HTTP API: this period's and the last period's cost by category and project from usage records
priced with the price book (a price change mid-period included), the linear forecast, deleted projects, and the
recommendations computed from real usage (an idle web component, an oversized instance, an unvisited preview)."""
from datetime import UTC, datetime, timedelta

import pytest

from platform_app.models import Project
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.billing.factories import DeploymentVisitFactory, PriceFactory, UsageRecordFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.factories import ComponentFactory

pytestmark = pytest.mark.django_db

C = "/v1/orgs/acme/cost"
NOW = datetime(2027, 4, 16, tzinfo=UTC)  # half of April measured (the clock only moves forward in tests)
APRIL, MARCH = datetime(2027, 4, 1, tzinfo=UTC), datetime(2027, 3, 1, tzinfo=UTC)


@pytest.fixture
def client(as_user, alice, time_machine):
    time_machine.move_to(NOW, tick=False)
    return as_user(alice)


@pytest.fixture
def projects(workspace):
    return (ProjectFactory(workspace=workspace, name="Api", slug="api"),
            ProjectFactory(workspace=workspace, name="Web", slug="web"))


def record(project, hour, meter, quantity):
    return UsageRecordFactory(project=project, hour=hour, meter=meter, quantity=quantity)


def test_overview_by_category_with_forecast_and_last_period(client, projects):
    api, web = projects
    record(api, APRIL + timedelta(hours=2), "build_seconds", 6000)  # 100 minutes at 1
    record(api, APRIL + timedelta(hours=3), "instance_seconds:standard", 36000)  # 10 hours at 3
    record(web, APRIL + timedelta(hours=3), "edge_requests", 1_000_000)  # 200 per million
    record(web, APRIL + timedelta(hours=4), "edge_bytes", 5 * 10 ** 9)  # 10 per GB
    record(web, APRIL + timedelta(hours=5), "storage_volumes", 10 ** 9 * 730)  # a GB-month at 10
    record(api, MARCH + timedelta(days=3), "build_seconds", 3000)
    UsageRecordFactory(hour=APRIL + timedelta(hours=1), quantity=10 ** 6)  # another workspace's
    body = client.get(f"{C}/overview").json()
    assert body["period"]["start"].startswith("2027-04-01T00:00:00") and body["period"]["end"].startswith("2027-05-01")
    assert body["currency"] == "usd" and body["total"] == 100 + 30 + 200 + 50 + 10
    assert body["byCategory"] == {"builds": 100, "requests": 200, "bandwidth": 50, "instances": 30, "storage": 10}
    assert body["quantities"] == {"builds": 100.0, "requests": 1_000_000.0, "bandwidth": 5.0, "instances": 10.0,
                                  "storage": 1.0}
    assert body["forecast"] == 2 * 390 and "linear" in body["forecastMethod"]
    assert body["measuredUntil"].startswith("2027-04-16T00:00:00")
    assert body["previousTotal"] == 50 and body["previousByCategory"]["builds"] == 50
    assert body["previousPeriod"]["start"].startswith("2027-03-01")


def test_an_hour_is_priced_by_the_price_valid_then(client, projects):
    api, _ = projects
    change = datetime(2027, 4, 10, tzinfo=UTC)
    PriceFactory(meter="build_seconds", unit_amount=1, unit_size=60, valid_from=datetime(2000, 1, 1, tzinfo=UTC),
                 valid_until=change)
    PriceFactory(meter="build_seconds", unit_amount=2, unit_size=60, valid_from=change)
    record(api, APRIL + timedelta(days=4), "build_seconds", 600)
    record(api, APRIL + timedelta(days=11), "build_seconds", 600)
    assert client.get(f"{C}/overview").json()["byCategory"]["builds"] == 10 + 20


def test_per_project_most_expensive_first_deleted_ones_included(client, projects):
    api, web = projects
    record(api, APRIL, "build_seconds", 600)
    record(web, APRIL, "build_seconds", 1200)
    record(api, MARCH, "build_seconds", 6000)
    web_id = web.pk
    Project.objects.filter(pk=web_id).delete()
    items = client.get(f"{C}/per-project").json()
    assert items == {"items": [
        {"projectId": web_id, "projectName": "Web", "deleted": True, "total": 20, "currency": "usd",
         "byCategory": {"builds": 20, "requests": 0, "bandwidth": 0, "instances": 0, "storage": 0}},
        {"projectId": api.pk, "projectName": "Api", "deleted": False, "total": 10, "currency": "usd",
         "byCategory": {"builds": 10, "requests": 0, "bandwidth": 0, "instances": 0, "storage": 0}}],
        "nextCursor": None}
    last = client.get(f"{C}/per-project?period=previous").json()["items"]
    assert [(p["projectId"], p["total"]) for p in last] == [(api.pk, 100)]
    first = client.get(f"{C}/per-project?limit=1").json()
    assert len(first["items"]) == 1 and first["nextCursor"]
    second = client.get(f"{C}/per-project?limit=1&cursor={first['nextCursor']}").json()
    assert second["items"][0]["projectId"] == api.pk and second["nextCursor"] is None


@pytest.mark.parametrize("query, name", [("period=next", "period"), ("limit=0", "limit"), ("cursor=xyz", "cursor"),
                                         ("limit=abc", "limit")])
def test_bad_query_parameters_are_400_naming_them(client, query, name):
    resp = client.get(f"{C}/per-project?{query}")
    assert resp.status_code == 400 and name in resp.json()["details"]


def test_every_member_reads_cost_and_outsiders_get_404(as_user, bob, charlie, time_machine):
    time_machine.move_to(NOW, tick=False)
    assert as_user(bob).get(f"{C}/overview").status_code == 200
    assert as_user(charlie).get(f"{C}/overview").status_code == 404


def test_recommendations_from_real_usage(client, projects, workspace):
    quiet, busy = projects
    node = AgentNodeFactory(workspace=workspace)
    long_ago = NOW - timedelta(days=10)
    # an idle web component: its project got no request in 7 days
    deployment = DeploymentFactory(project=quiet, env="production", status="ready", created_at=long_ago)
    idle = ComponentFactory(project=quiet, name="api", kind="web", instances=2, instance_size="standard",
                            deployment=deployment, created_at=long_ago)
    # the busy project's web component is oversized: a pro instance that never used 100 MB
    record(busy, NOW - timedelta(days=1), "edge_requests", 5000)
    busy_deployment = DeploymentFactory(project=busy, env="production", status="ready", created_at=long_ago)
    big = ComponentFactory(project=busy, name="web", kind="web", instances=1, instance_size="pro",
                           deployment=busy_deployment, created_at=long_ago)
    InstanceFactory(deployment=busy_deployment, node=node, component=big, status="running",
                    memory_peak_bytes=100 * 1024 * 1024)
    # a worker is never idle for lack of requests; a well-sized instance is not flagged
    worker = ComponentFactory(project=quiet, name="jobs", kind="worker", instance_size="starter",
                              deployment=deployment, created_at=long_ago)
    InstanceFactory(deployment=deployment, node=node, component=worker, status="running",
                    memory_peak_bytes=200 * 1024 * 1024)
    # a preview nobody opened, still running an instance; and one that was visited
    preview = DeploymentFactory(project=busy, env="preview", branch="feature", status="ready", created_at=long_ago,
                                artifact_bytes=5 * 10 ** 9)
    InstanceFactory(deployment=preview, node=node, status="running")
    seen = DeploymentFactory(project=busy, env="preview", branch="seen", status="ready", created_at=long_ago)
    InstanceFactory(deployment=seen, node=node, status="running")
    DeploymentVisitFactory(deployment=seen)

    items = client.get(f"{C}/recommendations").json()["items"]
    assert [(i["kind"], i["resource"], i["savingMonthly"]) for i in items] == [
        ("oversized_instance", big.pk, (10 - 1) * 730),
        ("idle_component", idle.pk, 2 * 3 * 730),
        ("unvisited_preview", preview.pk, 3 * 730 + 50),  # its instance, and 5 GB of archive at 10 a GB-month
    ]
    assert all(i["currency"] == "usd" for i in items)
    assert items[0]["projectId"] == busy.pk and "starter" in items[0]["message"] and "100 MB" in items[0]["message"]
    assert items[1]["projectId"] == quiet.pk and "no request in 7 days" in items[1]["message"]
    assert "never visited" in items[2]["message"] and "43.80 USD" in items[1]["message"]
    page = client.get(f"{C}/recommendations?limit=2").json()
    assert len(page["items"]) == 2 and page["nextCursor"]


def test_no_recommendations_for_a_fresh_workspace(client):
    assert client.get(f"{C}/recommendations").json() == {"items": [], "nextCursor": None}
