"""The status: probes run by beat under a controlled clock, SLO history and error budget from the samples the test
wrote, incidents written by staff through the API on the JSON and the page, the page's 90 daily bars without
JavaScript, and the staff incident pages."""
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings as django_settings

from otp_app.models import SandboxMessage
from platform_app.models import Deployment, Incident, IncidentUpdate, ProbeHour, ProbeSample
from platform_app.services.staff import probes
from platform_app.services.staff.probes import probe_sample_record
from platform_app.tasks.staff import status_probes_run
from tests.factories import UserFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.route_access_world import row_counts

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 18, 10, 0, 30, tzinfo=UTC)
INCIDENT = {"title": "Builds are slow", "impact": "minor", "status": "investigating",
            "message": "Builds wait longer than usual.", "components": ["builds"]}


@pytest.fixture
def staff(db):
    return UserFactory(email="staff@example.com", is_staff=True)


@pytest.fixture
def staff_api(staff, as_token):
    return as_token(staff, scopes=["admin"])


@pytest.fixture
def lenient(settings):
    """Thresholds no machine misses: these tests are about what the probes measure, never about timing."""
    settings.STATUS_SLOS = {k: {**v, "threshold_ms": 600_000} for k, v in django_settings.STATUS_SLOS.items()}
    return settings


@pytest.fixture
def static_site(settings, tmp_path):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    (settings.ARTIFACT_ROOT / "canary").mkdir(parents=True)
    (settings.ARTIFACT_ROOT / "canary" / "index.html").write_text("<h1>ok</h1>")
    project = ProjectFactory(slug="canary")
    return DeploymentFactory(project=project, status=Deployment.Status.READY, artifact_path="canary",
                             created_at=T0 - timedelta(days=1), ready_at=T0 - timedelta(days=1))


def run(capture):
    with capture(execute=True):  # the code probe's delivery is published on commit; tests run it eagerly
        return status_probes_run()


def test_beat_runs_the_probes_every_minute():
    entry = django_settings.CELERY_BEAT_SCHEDULE["status-probes"]
    assert entry == {"task": "platform_app.tasks.staff.status_probes_run", "schedule": 60.0}
    assert status_probes_run.name == entry["task"]


def test_probes_measure_the_running_system_under_a_controlled_clock(lenient, static_site, time_machine,
                                                                     django_capture_on_commit_callbacks, api):
    time_machine.move_to(T0, tick=False)
    first = run(django_capture_on_commit_callbacks)
    # nothing queued or started: no build sample; the first code was sent and is measured by the next run
    assert first == {"api": "good", "dashboard": "good", "builds": "none", "edge": "good", "delivery": "none",
                     "warehouse": "good"}
    sent = SandboxMessage.objects.get()
    assert sent.recipient == "status-probe-00@example.com" and sent.record.mode == "test"
    edge = ProbeSample.objects.get(probe="edge")
    assert edge.ref == static_site.pk and edge.good and edge.at == T0.replace(second=0)

    time_machine.move_to(T0 + timedelta(minutes=1), tick=False)
    DeploymentFactory(status=Deployment.Status.BUILDING, created_at=T0 + timedelta(seconds=10),
                      started_at=T0 + timedelta(seconds=55))  # waited 45 s, within the objective's 2 min
    second = run(django_capture_on_commit_callbacks)
    assert second == {"api": "good", "dashboard": "good", "builds": "good", "edge": "good", "delivery": "good",
                      "warehouse": "good"}
    delivery = ProbeSample.objects.get(probe="delivery")
    assert delivery.ref == sent.record_id and delivery.latency_ms == 0  # the clock stood still while it was sent
    assert ProbeSample.objects.get(probe="builds").latency_ms == 45_000
    assert SandboxMessage.objects.count() == 2  # the next code, to this minute's address
    assert ProbeHour.objects.get(probe="api", hour=T0.replace(second=0, minute=0)).samples == 2

    body = api.get("/v1/status/public").json()
    assert body["status"] == "operational"
    assert {c["key"]: c["status"] for c in body["components"]} == {
        "api": "operational", "dashboard": "operational", "builds": "operational", "edge": "operational",
        "delivery": "operational", "warehouse": "operational"}
    api_slo = next(s for s in body["slos"] if s["key"] == "api")
    assert api_slo["current"] == 100.0 and api_slo["errorBudgetRemaining"] == 100.0 and api_slo["objective"] == 99.9


def test_a_failing_probe_is_a_bad_sample_of_its_component(lenient, time_machine, django_capture_on_commit_callbacks,
                                                          api, monkeypatch, settings):
    time_machine.move_to(T0, tick=False)
    settings.STATUS_SLOS = {**settings.STATUS_SLOS, "builds": {**settings.STATUS_SLOS["builds"], "threshold_ms": 120_000}}
    DeploymentFactory(status=Deployment.Status.QUEUED, created_at=T0 - timedelta(minutes=10))

    def broken(now, slo):
        raise ConnectionError("no answer")

    monkeypatch.setitem(probes.PROBES, "warehouse", broken)
    result = run(django_capture_on_commit_callbacks)
    assert result["builds"] == "bad" and result["warehouse"] == "bad" and result["edge"] == "none"
    builds = ProbeSample.objects.get(probe="builds")
    assert builds.latency_ms == 600_000 and not builds.good
    assert ProbeSample.objects.get(probe="warehouse").detail == "the probe failed: ConnectionError: no answer"

    body = api.get("/v1/status/public").json()
    states = {c["key"]: c["status"] for c in body["components"]}
    assert states["builds"] == "outage" and states["warehouse"] == "outage" and states["api"] == "operational"
    assert body["status"] == "outage"

    # a good minute after it: some of the recent samples bad, so degraded
    monkeypatch.setitem(probes.PROBES, "warehouse", probes.probe_warehouse)
    time_machine.move_to(T0 + timedelta(minutes=1), tick=False)
    run(django_capture_on_commit_callbacks)
    states = {c["key"]: c["status"] for c in api.get("/v1/status/public").json()["components"]}
    assert states["warehouse"] == "degraded"
    # past STATUS_RECENT_MINUTES the bad sample no longer counts
    time_machine.move_to(T0 + timedelta(minutes=7), tick=False)
    run(django_capture_on_commit_callbacks)
    states = {c["key"]: c["status"] for c in api.get("/v1/status/public").json()["components"]}
    assert states["warehouse"] == "operational"


def test_minute_samples_are_pruned_but_their_hours_stay(settings, time_machine):
    time_machine.move_to(T0, tick=False)
    probe_sample_record(probe="api", at=T0 - timedelta(hours=49), good=True, latency_ms=5)
    probe_sample_record(probe="api", at=T0, good=True, latency_ms=5)
    assert probes.probe_samples_prune() == 1
    assert ProbeSample.objects.count() == 1 and ProbeHour.objects.count() == 2


def test_slo_history_and_error_budget_match_the_samples_written(settings, time_machine, api):
    now = datetime(2026, 3, 18, 12, 20, tzinfo=UTC)
    time_machine.move_to(now, tick=False)
    settings.STATUS_SLOS = {**settings.STATUS_SLOS, "api": {**settings.STATUS_SLOS["api"], "objective": 75.0}}
    for minute, good, ms in ((1, True, 100), (2, True, 200), (3, True, 300), (4, False, 900)):
        probe_sample_record(probe="api", at=now.replace(hour=10, minute=minute), good=good, latency_ms=ms)
    for minute, ms in ((5, 50), (6, 60)):
        probe_sample_record(probe="api", at=now.replace(hour=11, minute=minute), good=True, latency_ms=ms)
    probe_sample_record(probe="api", at=now.replace(minute=10), good=True, latency_ms=40)
    probe_sample_record(probe="api", at=datetime(2026, 2, 28, 23, 0, tzinfo=UTC), good=False)  # last month
    probe_sample_record(probe="edge", at=now.replace(hour=11), good=False, latency_ms=5)  # another SLO

    body = api.get("/v1/status/slo/api/history", {"hours": 4}).json()
    assert body == {"key": "api", "hours": 4, "points": [
        {"at": "2026-03-18T09:00:00.000000Z", "availability": None, "p95Ms": None},
        {"at": "2026-03-18T10:00:00.000000Z", "availability": 75.0, "p95Ms": 900},
        {"at": "2026-03-18T11:00:00.000000Z", "availability": 100.0, "p95Ms": 60},
        {"at": "2026-03-18T12:00:00.000000Z", "availability": 100.0, "p95Ms": 40}]}
    assert len(api.get("/v1/status/slo/api/history").json()["points"]) == 24
    assert len(api.get("/v1/status/slo/api/history", {"hours": 720}).json()["points"]) == 720

    slo = next(s for s in api.get("/v1/status/public").json()["slos"] if s["key"] == "api")
    # this month: 7 samples, 1 bad; the budget is 25 % of 7 = 1.75 bad samples, 0.75 of it left
    assert slo == {"key": "api", "description": settings.STATUS_SLOS["api"]["description"], "objective": 75.0,
                   "current": 85.714, "errorBudgetRemaining": 42.857}


@pytest.mark.parametrize("hours", ["0", "721", "-3", "a day", ""])
def test_history_hours_out_of_range_is_400_naming_it(api, hours):
    resp = api.get("/v1/status/slo/api/history", {"hours": hours})
    assert resp.status_code == 400
    assert resp.json()["code"] == "validation_error" and list(resp.json()["details"]) == ["hours"]


def test_unknown_slo_is_404(api):
    resp = api.get("/v1/status/slo/nope/history")
    assert resp.status_code == 404 and resp.json()["code"] == "not_found"


def test_incident_from_staff_appears_in_the_json_and_on_the_page_with_its_updates(staff_api, api, client, travel):
    resp = staff_api.post("/v1/admin/incidents", INCIDENT, format="json")
    assert resp.status_code == 201
    incident = resp.json()
    assert incident["title"] == "Builds are slow" and incident["status"] == "investigating"
    assert incident["resolvedAt"] is None and incident["components"] == ["builds"]
    assert [(u["status"], u["message"]) for u in incident["updates"]] == [("investigating",
                                                                           "Builds wait longer than usual.")]
    travel(60)
    resp = staff_api.post(f"/v1/admin/incidents/{incident['id']}/updates",
                          {"status": "identified", "message": "A builder is down."}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "identified"

    body = api.get("/v1/status/public").json()
    assert body["status"] == "degraded"
    assert {c["key"]: c["status"] for c in body["components"]}["builds"] == "degraded"
    shown = body["incidents"][0]
    assert shown["id"] == incident["id"] and shown["impact"] == "minor" and shown["status"] == "identified"
    assert [(u["status"], u["message"]) for u in shown["updates"]] == [
        ("investigating", "Builds wait longer than usual."), ("identified", "A builder is down.")]
    page = client.get("/status")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Builds are slow" in html and "A builder is down." in html and "Degraded performance" in html

    travel(60)
    resolved = staff_api.post(f"/v1/admin/incidents/{incident['id']}/updates",
                              {"status": "resolved", "message": "The builder is back."}, format="json").json()
    assert resolved["status"] == "resolved" and resolved["resolvedAt"] is not None
    body = api.get("/v1/status/public").json()
    assert body["status"] == "operational" and body["incidents"][0]["status"] == "resolved"
    travel(8 * 86400)  # resolved incidents stay listed for 7 days
    assert api.get("/v1/status/public").json()["incidents"] == []


def test_a_critical_incident_is_an_outage_of_its_components(staff_api, api):
    staff_api.post("/v1/admin/incidents", {**INCIDENT, "impact": "critical", "components": ["edge", "api"]},
                   format="json")
    states = {c["key"]: c["status"] for c in api.get("/v1/status/public").json()["components"]}
    assert states == {"api": "outage", "dashboard": "operational", "builds": "operational", "edge": "outage",
                      "delivery": "operational", "warehouse": "operational"}


@pytest.mark.parametrize("body, field", [
    ({**INCIDENT, "impact": "catastrophic"}, "impact"), ({**INCIDENT, "status": "panicking"}, "status"),
    ({**INCIDENT, "components": ["mainframe"]}, "components"), ({**INCIDENT, "title": ""}, "title"),
    ({k: v for k, v in INCIDENT.items() if k != "message"}, "message"), ({**INCIDENT, "extra": 1}, "extra"),
])
def test_bad_incident_bodies_are_400_and_write_nothing(staff_api, body, field):
    before = row_counts()
    resp = staff_api.post("/v1/admin/incidents", body, format="json")
    assert resp.status_code == 400 and field in resp.json()["details"]
    assert row_counts() == before


def test_updates_of_unknown_incidents_are_404_and_bad_updates_400(staff_api):
    resp = staff_api.post("/v1/admin/incidents/inc_nosuchincident00/updates", {"status": "resolved", "message": "x"},
                          format="json")
    assert resp.status_code == 404 and resp.json()["code"] == "not_found"
    incident = staff_api.post("/v1/admin/incidents", INCIDENT, format="json").json()
    for body, field in (({"status": "done", "message": "x"}, "status"), ({"status": "resolved"}, "message")):
        resp = staff_api.post(f"/v1/admin/incidents/{incident['id']}/updates", body, format="json")
        assert resp.status_code == 400 and field in resp.json()["details"]
    assert IncidentUpdate.objects.count() == 1 and Incident.objects.get().status == "investigating"


def test_status_page_shows_90_daily_bars_rendered_on_the_server(client, time_machine):
    now = datetime(2026, 3, 18, 12, 0, tzinfo=UTC)
    time_machine.move_to(now, tick=False)
    ProbeHour.objects.create(probe="edge", hour=now - timedelta(days=3), samples=60, good=30, p95_ms=10)
    ProbeHour.objects.create(probe="api", hour=now - timedelta(days=3), samples=60, good=60, p95_ms=10)
    Incident.objects.create(title="Old edge trouble", impact="major", components=["edge"],
                            started_at=now - timedelta(days=40), status="resolved",
                            resolved_at=now - timedelta(days=39))
    resp = client.get("/status")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert html.count('<li class="bar-') == 90 * len(django_settings.STATUS_COMPONENTS)
    assert "2026-03-15: 50.0 %" in html and "2026-03-15: 100.0 %" in html
    assert "2026-02-06: no data, 1 incident" in html  # the day the resolved incident began
    assert 'href="/status"' in html  # the site navigation links the page
    assert "Old edge trouble" not in html  # resolved long ago: a bar, not a listed incident


def test_staff_incident_pages_open_update_and_resolve(client, staff):
    resp = client.get("/staff/incidents/")
    assert resp.status_code == 302 and "/dashboard/login/" in resp["Location"]
    client.force_login(UserFactory(email="someone@example.com"))
    assert client.get("/staff/incidents/").status_code == 403
    assert client.post("/staff/incidents/", {"title": "x"}).status_code == 403 and not Incident.objects.exists()

    client.force_login(staff)
    assert client.get("/staff/incidents/").status_code == 200
    resp = client.post("/staff/incidents/", {"title": "API errors", "impact": "major", "status": "investigating",
                                             "message": "Some calls fail.", "components": ["api"]})
    incident = Incident.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/staff/incidents/{incident.pk}/"
    assert incident.components == ["api"] and incident.created_by == staff
    bad = client.post("/staff/incidents/", {"title": "", "impact": "major", "status": "investigating", "message": ""})
    assert bad.status_code == 400 and Incident.objects.count() == 1

    page = client.get(f"/staff/incidents/{incident.pk}/")
    assert page.status_code == 200 and "Some calls fail." in page.content.decode()
    client.post(f"/staff/incidents/{incident.pk}/", {"status": "monitoring", "message": "A fix is out."})
    client.post(f"/staff/incidents/{incident.pk}/", {"status": "resolved", "message": "All good."})
    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.resolved_at is not None
    assert list(incident.updates.values_list("status", flat=True)) == ["investigating", "monitoring", "resolved"]
    assert client.get("/staff/incidents/inc_nosuchincident00/").status_code == 404
