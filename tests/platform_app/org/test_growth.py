"""Growth through the HTTP API: milestones recorded once where they happen (sign-up, workspace, first project,
first ready deployment, first domain), allow-listed client events, the weekly funnel by cohort (weeks validated),
the weekly review computed by beat and kept as history; staff only, except `track`."""
from datetime import UTC, datetime, timedelta

import pytest

from platform_app.models import Deployment, GrowthEvent, User, WeeklyReview, Workspace
from platform_app.tasks.org import growth_reviews_compute
from tests.conftest import hosted_repo
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.deployments.test_builds import trigger
from tests.platform_app.org.factories import WeeklyReviewFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db
MONDAY = datetime(2026, 11, 16, 12, tzinfo=UTC)  # a Monday


def events(name):
    return list(GrowthEvent.objects.filter(event=name))


def test_milestones_are_recorded_once_where_they_happen(api, as_user, settings, tmp_path,
                                                        django_capture_on_commit_callbacks):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    signed = api.post("/v1/auth/sign-up", {"email": "new@example.com", "password": "a-long-password-2026"},
                      format="json")
    assert signed.status_code == 201
    user_id = signed.json()["user"]["id"]
    assert [(e.user_id, e.properties["via"]) for e in events("signed_up")] == [(user_id, "password")]
    client = as_user(User.objects.get(pk=user_id))
    org = client.post("/v1/orgs", {"name": "Acme"}, format="json").json()
    assert [(e.workspace_id, e.user_id) for e in events("workspace_created")] == [(org["id"], user_id)]
    for name in ("Api", "Worker"):
        assert client.post("/v1/orgs/acme/projects/from-image", {"name": name, "imageRef": "nginx:1"},
                           format="json").status_code == 201
    assert [e.workspace_id for e in events("first_project")] == [org["id"]]
    # a first ready deployment, built for real; a second one records nothing more
    workspace = Workspace.objects.get(pk=org["id"])
    project = ProjectFactory(workspace=workspace, slug="site", git_url=hosted_repo(workspace, "site", {
        "index.html": "<h1>hi</h1>"}))
    for _ in range(2):
        trigger(client, project, django_capture_on_commit_callbacks)
    assert Deployment.objects.filter(status="ready").count() == 2
    assert [(e.workspace_id, e.user_id) for e in events("first_deployment_ready")] == [(org["id"], user_id)]
    for name in ("www.example.com", "shop.example.com"):
        assert client.post(f"/v1/orgs/acme/projects/{project.pk}/domains", {"name": name},
                           format="json").status_code == 201
    assert [e.workspace_id for e in events("first_domain")] == [org["id"]]


def test_track_takes_allowed_client_events_from_anyone_signed_in(alice_client, alice, api, settings):
    resp = alice_client.post("/v1/growth/track", {"event": "docs_opened", "properties": {"section": "cli"}},
                             format="json")
    assert resp.status_code == 201 and resp.json()["event"] == "docs_opened"
    event = GrowthEvent.objects.get(pk=resp.json()["id"])
    assert (event.user, event.source, event.properties) == (alice, "client", {"section": "cli"})
    for body, field in (({"event": "signed_up"}, "event"), ({"event": "mined_bitcoin"}, "event"),
                        ({"event": "docs_opened", "properties": {"k": {"nested": 1}}}, "properties"),
                        ({"event": "docs_opened", "properties": {f"k{i}": i for i in range(21)}}, "properties"),
                        ({"event": "docs_opened", "properties": ["a"]}, "properties"),
                        ({"event": "docs_opened", "extra": 1}, "extra")):
        bad = alice_client.post("/v1/growth/track", body, format="json")
        assert bad.status_code == 400 and field in bad.json()["details"], (body, bad.json())
    assert api.post("/v1/growth/track", {"event": "docs_opened"}, format="json").status_code == 401
    settings.GROWTH_TRACK_PER_USER_PER_MINUTE = 1
    assert alice_client.post("/v1/growth/track", {"event": "docs_opened"}, format="json").status_code == 429
    assert GrowthEvent.objects.filter(source="client").count() == 1


def test_funnel_by_weekly_cohort(staff, as_user, time_machine):
    time_machine.move_to(MONDAY, tick=False)
    User.objects.filter(pk=staff.pk).update(date_joined=MONDAY - timedelta(days=400))

    def signed_up(days_ago, *milestones):
        user = UserFactory(date_joined=MONDAY - timedelta(days=days_ago))
        if milestones:
            workspace = WorkspaceFactory()
            MembershipFactory(workspace=workspace, user=user)
            GrowthEvent.objects.create(event="workspace_created", user=user, workspace=workspace)
            for name in milestones:
                GrowthEvent.objects.create(event=name, user=None, workspace=workspace)
        return user

    signed_up(1, "first_project", "first_deployment_ready")  # last week (Sunday back to Monday)
    signed_up(4, "first_project")
    signed_up(7)
    signed_up(0, "first_project", "first_deployment_ready", "first_domain")  # this week
    signed_up(8, "first_project")  # two weeks ago: outside
    resp = as_user(staff).get("/v1/growth/funnel?weeks=2")
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert body["weeks"] == 2
    assert body["steps"] == ["signed_up", "workspace_created", "first_project", "first_deployment_ready",
                             "first_domain", "subscribed"]
    assert body["cohorts"] == [{"week": "2026-11-09", "counts": [3, 2, 2, 1, 0, 0]},
                               {"week": "2026-11-16", "counts": [1, 1, 1, 1, 1, 0]}]
    assert len(as_user(staff).get("/v1/growth/funnel").json()["cohorts"]) == 8


@pytest.mark.parametrize("query", ["weeks=0", "weeks=53", "weeks=-1", "weeks=two", "weeks="])
def test_funnel_weeks_is_validated(staff, as_user, query):
    resp = as_user(staff).get(f"/v1/growth/funnel?{query}")
    assert resp.status_code == 400 and "weeks" in resp.json()["details"]


def test_review_current_and_history(staff, as_user, workspace, time_machine):
    time_machine.move_to(MONDAY + timedelta(days=2), tick=False)
    project = ProjectFactory(workspace=workspace)
    other = ProjectFactory(workspace=WorkspaceFactory())
    for status, p in (("ready", project), ("ready", project), ("error", other), ("queued", other)):
        DeploymentFactory(project=p, status=status,
                          finished_at=MONDAY + timedelta(days=1) if status != "queued" else None)
    DeploymentFactory(project=project, status="error", created_at=MONDAY - timedelta(days=3),
                      finished_at=MONDAY - timedelta(days=3))  # last week
    User.objects.filter(pk=staff.pk).update(date_joined=MONDAY - timedelta(days=400))
    UserFactory(date_joined=MONDAY + timedelta(days=1))
    UserFactory(date_joined=MONDAY - timedelta(days=3))
    client = as_user(staff)
    resp = client.get("/v1/growth/review/current")
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert {k: body[k] for k in ("week", "activeWorkspaces", "signUps", "deployments", "failureRate", "revenue")} == {
        "week": "2026-11-16", "activeWorkspaces": 2, "signUps": 1, "deployments": 4, "failureRate": 0.3333,
        "revenue": 0}
    assert body["revenueNote"] == "paid invoices, minor units of USD"  # none paid this week
    # beat keeps last week too; history is newest first, n validated
    growth_reviews_compute.delay()
    history = client.get("/v1/growth/review/history?n=5").json()
    assert [r["week"] for r in history["items"]] == ["2026-11-16", "2026-11-09"] and history["nextCursor"] is None
    last_week = history["items"][1]
    assert (last_week["deployments"], last_week["failureRate"], last_week["signUps"]) == (1, 1.0, 1)
    for n in ("0", "53", "x"):
        assert client.get(f"/v1/growth/review/history?n={n}").status_code == 400
    WeeklyReviewFactory.create_batch(3)
    assert len(client.get("/v1/growth/review/history?n=2").json()["items"]) == 2


def test_revenue_is_what_paid_invoices_brought_in_this_week(staff, as_user):
    from django.utils import timezone

    from tests.platform_app.billing.factories import InvoiceFactory

    now = timezone.now()
    InvoiceFactory(status="paid", total=4200, paid_at=now)
    InvoiceFactory(status="paid", total=800, paid_at=now)
    InvoiceFactory(status="open", total=9999)  # not paid
    InvoiceFactory(status="paid", total=5000, paid_at=now - timedelta(days=8))  # another week
    body = as_user(staff).get("/v1/growth/review/current").json()
    assert body["revenue"] == 5000 and "paid invoices" in body["revenueNote"]


def test_growth_reads_are_for_staff(alice, as_user):
    client = as_user(alice)
    for path in ("/v1/growth/funnel", "/v1/growth/review/current", "/v1/growth/review/history"):
        resp = client.get(path)
        assert resp.status_code == 403 and resp.json()["code"] == "forbidden", path
    assert not WeeklyReview.objects.exists()


def test_a_milestone_recording_failure_never_fails_its_caller(alice_client, monkeypatch):
    from django.db import DatabaseError

    def broken(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(GrowthEvent.objects, "bulk_create", broken)
    assert alice_client.post("/v1/orgs/acme/projects/from-image", {"name": "Api", "imageRef": "nginx:1"},
                             format="json").status_code == 201
