"""The staff reports `/v1/admin/...` through the HTTP API: staff only (every route refuses non-staff users, staff
tokens without `admin` and tokens bound to a workspace), each report against numbers the test created, bad query
parameters 400 naming them, and the Django admin's index showing the same overview."""
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from platform_app.models import AgentNode, BuildJob, Incident
from tests.factories import MembershipFactory, SuperuserFactory, UserFactory, WorkspaceFactory
from tests.platform_app.agents.factories import AgentNodeFactory
from tests.platform_app.billing.factories import UsageRecordFactory
from tests.platform_app.deployments.factories import DeploymentFactory, DoctorReportFactory, LogLineFactory
from tests.platform_app.identity.factories import AuditEventFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.route_access_world import row_counts

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)  # a Wednesday: the week began Monday 16th
GETS = ["/v1/admin/overview", "/v1/admin/tiers", "/v1/admin/billing/revenue-by-month", "/v1/admin/config",
        "/v1/admin/deploy-failures", "/v1/admin/orgs", "/v1/admin/users", "/v1/admin/deployments",
        "/v1/admin/billing/invoices", "/v1/admin/usage", "/v1/admin/audit", "/v1/admin/orgs/{org}"]
POSTS = ["/v1/admin/incidents", "/v1/admin/incidents/{incident}/updates"]
INCIDENT = {"title": "Builds are slow", "impact": "minor", "status": "investigating", "message": "Looking.",
            "components": ["builds"]}


@pytest.fixture
def staff(db):
    return UserFactory(email="staff@example.com", is_staff=True)


@pytest.fixture
def staff_client(staff, as_token):
    """An admin API token of the staff user (it outlives the moves of the clock, where a JWT would not)."""
    return as_token(staff, scopes=["admin"])


def fill(path, workspace, incident=None):
    return path.format(org=workspace.pk, incident=incident.pk if incident else "inc_none")


def call(client, method, path):
    if method == "GET":
        return client.get(path)
    body = INCIDENT if path.endswith("incidents") else {"status": "resolved", "message": "Fixed."}
    return client.post(path, body, format="json")


ROUTES = [("GET", p) for p in GETS] + [("POST", p) for p in POSTS]


@pytest.mark.parametrize("method, path", ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_non_staff_get_403_forbidden_on_every_admin_route(workspace, alice, alice_client, as_token, staff, method,
                                                          path):
    incident = Incident.objects.create(title="x", impact="minor")
    url = fill(path, workspace, incident)
    before = row_counts()
    for client in (alice_client, as_token(alice, scopes=["admin"])):  # an owner's session and admin token
        resp = call(client, method, url)
        assert resp.status_code == 403, resp.content[:300]
        body = resp.json()
        assert body["code"] == "forbidden" and body["status"] == 403 and set(body) == {"code", "message", "details",
                                                                                       "status"}
    # staff, but a token without `admin`, or one bound to a workspace
    resp = call(as_token(staff, scopes=["read"]), method, url)
    assert resp.status_code == 403 and resp.json()["code"] == "insufficient_scope"
    bound = WorkspaceFactory(slug="staffs")
    MembershipFactory(workspace=bound, user=staff, role="owner")
    resp = call(as_token(staff, scopes=["admin"], workspace=bound), method, url)
    assert resp.status_code == 403 and resp.json()["code"] == "forbidden"
    after = row_counts()
    after.pop("platform_app.ApiToken"), before.pop("platform_app.ApiToken")
    after.pop("platform_app.Workspace"), before.pop("platform_app.Workspace")
    after.pop("platform_app.Membership"), before.pop("platform_app.Membership")
    after.pop("platform_app.AuditEvent", None), before.pop("platform_app.AuditEvent", None)
    assert after == before  # nothing an admin route writes was written
    # and staff with an admin token pass
    resp = call(as_token(staff, scopes=["admin"]), method, url)
    assert resp.status_code in (200, 201), resp.content[:300]


def test_overview_counts_what_the_test_created(staff, staff_client, time_machine):
    time_machine.move_to(NOW, tick=False)
    free, pro = WorkspaceFactory(slug="w1"), WorkspaceFactory(slug="w2", plan="pro")
    MembershipFactory(workspace=free, user=UserFactory(), role="owner")
    project = ProjectFactory(workspace=free)
    ProjectFactory(workspace=pro)
    at = lambda **kw: NOW - timedelta(**kw)  # noqa: E731
    DeploymentFactory(project=project, created_at=at(hours=1), status="ready", finished_at=at(minutes=50))
    DeploymentFactory(project=project, created_at=at(hours=2), status="error", finished_at=at(hours=1))
    DeploymentFactory(project=project, created_at=at(days=1), status="error", finished_at=at(days=1))
    DeploymentFactory(project=project, created_at=at(days=2), status="ready", finished_at=at(days=2))
    DeploymentFactory(project=project, created_at=at(days=5), status="ready", finished_at=at(days=5))  # last week
    DeploymentFactory(project=project, created_at=at(days=30), status="error", finished_at=at(days=30))  # outside
    DeploymentFactory(project=project, created_at=at(minutes=5), status="queued")
    waiting = DeploymentFactory(project=project, created_at=at(minutes=3), status="building")
    BuildJob.objects.create(deployment=waiting, spec={}, source="x.tar", state="pending")
    claimed = DeploymentFactory(project=project, created_at=at(minutes=2), status="building")
    BuildJob.objects.create(deployment=claimed, spec={}, source="y.tar", state="claimed")
    AgentNodeFactory(workspace=free, runtimes=["process"], last_heartbeat_at=NOW)
    AgentNodeFactory(workspace=None, runtimes=["build"], last_heartbeat_at=NOW)
    AgentNodeFactory(workspace=None, runtimes=["build", "process"], last_heartbeat_at=NOW)
    AgentNodeFactory(workspace=None, runtimes=["build"], last_heartbeat_at=at(minutes=10))  # silent
    AgentNodeFactory(workspace=free, runtimes=["process"], status=AgentNode.Status.OFFLINE, last_heartbeat_at=NOW)

    body = staff_client.get("/v1/admin/overview").json()
    assert body == {
        "users": 2, "workspaces": 2, "projects": 2, "deploymentsToday": 5, "deploymentsThisWeek": 7,
        "buildFailureRate": 40.0, "buildsFinished": 5, "buildsFailed": 2, "failureWindowDays": 7,
        "queueLength": 2, "agentsOnline": 2, "buildersOnline": 2, "at": "2026-03-18T15:30:00Z"}


def test_admin_index_shows_the_same_overview(client, time_machine):
    time_machine.move_to(NOW, tick=False)
    DeploymentFactory(status="queued", created_at=NOW)
    staff = SuperuserFactory(email="root@example.com")
    client.force_login(staff)
    resp = client.get(reverse("admin:index"))
    assert resp.status_code == 200
    body = resp.content.decode()
    assert 'data-key="queue_length">1<' in body and 'data-key="users">1<' in body
    assert 'data-key="deployments_today">1<' in body and "Workspaces per plan" in body


def test_tiers_count_workspaces_per_plan(staff_client):
    WorkspaceFactory(plan="pro"), WorkspaceFactory(plan="pro"), WorkspaceFactory(plan="free")
    WorkspaceFactory(plan="legacy")
    body = staff_client.get("/v1/admin/tiers").json()
    assert body == {"items": [{"plan": "free", "workspaces": 1, "known": True},
                              {"plan": "pro", "workspaces": 2, "known": True},
                              {"plan": "enterprise", "workspaces": 0, "known": True},
                              {"plan": "legacy", "workspaces": 1, "known": False}], "total": 4}


def test_usage_records_of_every_workspace_newest_hour_first(staff_client):
    """Revenue and invoices are the billing area's tests (tests/platform_app/billing/test_staff_reports.py)."""
    older = UsageRecordFactory(hour=NOW - timedelta(hours=2), meter="build_seconds", quantity=600)
    newer = UsageRecordFactory(hour=NOW - timedelta(hours=1), meter="egress_bytes", quantity=2048)
    first = staff_client.get("/v1/admin/usage", {"limit": 1}).json()
    assert [(i["id"], i["meter"], i["quantity"]) for i in first["items"]] == [(newer.pk, "egress_bytes", 2048)]
    assert first["items"][0]["workspaceSlug"] == newer.workspace.slug
    rest = staff_client.get("/v1/admin/usage", {"limit": 1, "cursor": first["nextCursor"]}).json()
    assert [i["id"] for i in rest["items"]] == [older.pk] and rest["nextCursor"] is None
    bad = staff_client.get("/v1/admin/usage", {"limit": "many"})
    assert bad.status_code == 400 and bad.json()["details"] == {"limit": ["Must be an integer."]}


def test_config_shows_the_running_settings_without_secrets(staff_client, settings):
    settings.REDIS_URL = "redis://:hunter2-redis@cache.internal:6379/3"
    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS,
                              "git-a": {**settings.GIT_PROVIDERS["git-a"], "client_id": "app-id",
                                        "client_secret": "hunter2-git"}}
    settings.TWILIO_ACCOUNT_SID, settings.TWILIO_AUTH_TOKEN = "AC123", "hunter2-twilio"
    settings.GIT_A_WEBHOOK_SECRET = "hunter2-hook"
    resp = staff_client.get("/v1/admin/config")
    assert resp.status_code == 200
    assert "hunter2" not in resp.content.decode() and settings.SECRET_KEY not in resp.content.decode()
    body = resp.json()
    assert body["redis"] == "redis://cache.internal:6379/3"
    assert body["providers"]["git-a"] is True and body["providers"]["git-b"] is False
    assert body["providers"]["twilio"] is True and body["providers"]["gitAWebhooks"] is True
    assert body["database"]["engine"] in ("sqlite3", "postgresql") and set(body["database"]) == {"engine", "host",
                                                                                                  "port", "name"}
    assert body["debug"] is False and "testserver" in body["allowedHosts"]
    assert body["buildLimits"]["memoryMb"] == settings.BUILD_MEMORY_MB
    assert body["sandbox"]["runner"] == settings.SANDBOX_RUNNER and "allowHttp" in body["outbound"]


def test_deploy_failures_grouped_by_the_doctors_finding(staff_client, time_machine):
    time_machine.move_to(NOW, tick=False)
    project = ProjectFactory()
    missing = []
    for n in range(2):
        d = DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(days=1, minutes=n))
        LogLineFactory(deployment=d, seq=1, text="ModuleNotFoundError: No module named 'flask'")
        missing.append(d.pk)
    oom = DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(days=2))
    LogLineFactory(deployment=oom, seq=1, text="FATAL ERROR: JavaScript heap out of memory")
    stored = DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(days=3))
    DoctorReportFactory(deployment=stored, findings=[{"rule": "missing-env-var", "title": "Environment variable X",
                                                      "evidence": [], "fix": "Add X."}])
    unknown = DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(hours=3))
    LogLineFactory(deployment=unknown, seq=1, text="something odd happened")
    DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(days=20))  # outside 7 days
    DeploymentFactory(project=project, status="ready", created_at=NOW - timedelta(days=1))

    body = staff_client.get("/v1/admin/deploy-failures", {"days": 7}).json()
    assert body["days"] == 7 and body["failures"] == 5 and body["since"] == "2026-03-11T15:30:00Z"
    groups = {g["rule"]: g for g in body["groups"]}
    assert [g["rule"] for g in body["groups"]][0] == "missing-dependency"
    assert groups["missing-dependency"]["count"] == 2 and groups["missing-dependency"]["deployments"] == missing
    assert groups["out-of-memory"]["deployments"] == [oom.pk]
    assert groups["missing-env-var"]["deployments"] == [stored.pk]
    assert groups["unexplained"]["deployments"] == [unknown.pk]
    assert staff_client.get("/v1/admin/deploy-failures", {"days": 30}).json()["failures"] == 6


@pytest.mark.parametrize("value", ["0", "91", "-1", "seven", ""])
def test_deploy_failures_days_out_of_range_is_400(staff_client, value):
    resp = staff_client.get("/v1/admin/deploy-failures", {"days": value})
    assert resp.status_code == 400
    body = resp.json()
    assert body["code"] == "validation_error" and list(body["details"]) == ["days"]


def test_lists_page_with_limit_and_cursor(staff, staff_client, time_machine):
    time_machine.move_to(NOW, tick=False)
    workspaces = [WorkspaceFactory(slug=f"w{n}", created_at=NOW - timedelta(hours=n)) for n in range(3)]
    project = ProjectFactory(workspace=workspaces[0])
    MembershipFactory(workspace=workspaces[0], user=staff, role="owner")
    deployments = [DeploymentFactory(project=project, created_at=NOW - timedelta(minutes=n)) for n in range(3)]
    events = [AuditEventFactory(workspace=workspaces[0], actor=staff, action=f"thing.done{n}",
                                created_at=NOW - timedelta(minutes=n)) for n in range(3)]

    first = staff_client.get("/v1/admin/orgs", {"limit": 2}).json()
    assert [w["id"] for w in first["items"]] == [workspaces[0].pk, workspaces[1].pk]
    assert first["items"][0] == {"id": workspaces[0].pk, "slug": "w0", "name": workspaces[0].name, "plan": "free",
                                 "members": 1, "projects": 1, "createdAt": "2026-03-18T15:30:00.000000Z"}
    rest = staff_client.get("/v1/admin/orgs", {"limit": 2, "cursor": first["nextCursor"]}).json()
    assert [w["id"] for w in rest["items"]] == [workspaces[2].pk] and rest["nextCursor"] is None

    page = staff_client.get("/v1/admin/deployments", {"limit": 2}).json()
    assert [d["id"] for d in page["items"]] == [deployments[0].pk, deployments[1].pk]
    assert page["items"][0]["orgId"] == workspaces[0].pk and page["items"][0]["projectSlug"] == project.slug
    page = staff_client.get("/v1/admin/deployments", {"limit": 2, "cursor": page["nextCursor"]}).json()
    assert [d["id"] for d in page["items"]] == [deployments[2].pk]

    audit = staff_client.get("/v1/admin/audit", {"limit": 1}).json()
    assert [e["action"] for e in audit["items"]] == ["thing.done0"] and audit["items"][0]["actor"] == staff.email
    audit = staff_client.get("/v1/admin/audit", {"limit": 5, "cursor": audit["nextCursor"]}).json()
    assert [e["action"] for e in audit["items"]] == ["thing.done1", "thing.done2"]

    users = staff_client.get("/v1/admin/users").json()
    assert [u["email"] for u in users["items"]] == ["staff@example.com"]
    assert users["items"][0]["isStaff"] is True and users["items"][0]["workspaces"] == 1


@pytest.mark.parametrize("path", ["/v1/admin/orgs", "/v1/admin/users", "/v1/admin/deployments", "/v1/admin/audit"])
@pytest.mark.parametrize("limit", ["0", "x", "1.5"])
def test_bad_limit_is_400_naming_it(staff_client, path, limit):
    resp = staff_client.get(path, {"limit": limit})
    assert resp.status_code == 400 and list(resp.json()["details"]) == ["limit"]


def test_one_org_in_full(staff_client, alice, bob, workspace, time_machine):
    time_machine.move_to(NOW, tick=False)
    project = ProjectFactory(workspace=workspace, slug="web", name="Web")
    DeploymentFactory(project=project, status="ready", created_at=NOW - timedelta(days=1))
    DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(days=2))
    DeploymentFactory(project=project, status="error", created_at=NOW - timedelta(days=10))
    node = AgentNodeFactory(workspace=workspace, name="n1", runtimes=["process"])
    AuditEventFactory(workspace=workspace, actor=alice)
    for ref in (workspace.pk, workspace.slug):
        body = staff_client.get(f"/v1/admin/orgs/{ref}").json()
        assert body["id"] == workspace.pk and body["plan"] == "free"
        assert [(m["email"], m["role"]) for m in body["members"]] == [("alice@example.com", "owner"),
                                                                      ("bob@example.com", "developer")]
        assert [(p["slug"], p["deployments"]) for p in body["projects"]] == [("web", 3)]
        assert [n["id"] for n in body["nodes"]] == [node.pk]
        assert body["counts"] == {"members": 2, "projects": 1, "nodes": 1, "deployments": 3,
                                  "deploymentsLast7Days": 2, "failedLast7Days": 1, "domains": 0, "auditEvents": 1,
                                  "deploymentsByStatus": {"error": 2, "ready": 1}}
    resp = staff_client.get("/v1/admin/orgs/org_doesnotexist")
    assert resp.status_code == 404 and resp.json()["code"] == "not_found"
