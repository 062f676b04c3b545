"""Cron jobs through the API, and their runs driven by beat ticks on a controlled clock: each call goes through
the edge to the project's running instance (a local HTTP server standing in for the app)."""
from datetime import UTC, datetime

import pytest
from werkzeug import Response

from platform_app.models import CronJob, CronRun, Deployment
from platform_app.services.env.crypto import decrypt
from platform_app.tasks.automation import cron_tick
from tests.conftest import at_once
from tests.platform_app.automation.factories import CronJobFactory, CronRunFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 24, 10, 0, 30, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clock(time_machine):
    """`clock(hh, mm, ss)` sets the frozen clock on the test day (from the start, so tokens are issued on it)."""
    time_machine.move_to(START, tick=False)

    def at(hour, minute, second=0):
        time_machine.move_to(datetime(2026, 11, 24, hour, minute, second, tzinfo=UTC), tick=False)

    return at


@pytest.fixture
def tick(django_capture_on_commit_callbacks):
    """One beat tick, its enqueued runs executed as a worker would once the tick's rows are committed."""

    def run():
        with django_capture_on_commit_callbacks(execute=True):
            return cron_tick()

    return run


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/cron{rest}"


def create(client, project, **body):
    body = {"schedule": "* * * * *", "path": "/api/cron", **body}
    return client.post(url(project), body, format="json")


def test_create_shows_the_secret_once_and_the_next_runs(alice_client, alice, served_project):
    resp = create(alice_client, served_project, schedule="0 9 * * 1-5", timezone="Europe/Berlin")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    job = CronJob.objects.get()
    assert body["secret"].startswith("svcs_") and decrypt(job.secret_encrypted) == body["secret"]
    assert job.secret_encrypted != body["secret"]
    # 09:00 in Berlin is 08:00 UTC in November; Tuesday 24th has passed 08:00, so Wednesday first
    assert [when(t) for t in body["nextRuns"]] == [datetime(2026, m, d, 8, tzinfo=UTC) for m, d in
                                                   ((11, 25), (11, 26), (11, 27), (11, 30), (12, 1))]
    assert body["enabled"] is True and body["lastRun"] is None and body["timezone"] == "Europe/Berlin"
    listed = alice_client.get(url(served_project)).json()["items"]
    assert [j["id"] for j in listed] == [job.pk] and "secret" not in listed[0]


@pytest.mark.parametrize("field, value", [
    ("schedule", "* * * * * *"),         # a seconds field
    ("schedule", "61 * * * *"),
    ("schedule", "* * *"),
    ("schedule", "@reboot"),
    ("timezone", "Mars/Olympus"),
    ("path", "https://evil.example.com/x"),
    ("path", "//evil.example.com/x"),
    ("path", "api/cron"),
    ("path", "/a b"),
    ("retries", 9),
])
def test_bad_input_is_400_and_creates_nothing(alice_client, served_project, field, value):
    resp = create(alice_client, served_project, **{field: value})
    assert resp.status_code == 400, resp.json()
    assert resp.json()["code"] == "validation_error"
    assert not CronJob.objects.exists()


def test_too_frequent_schedule_is_refused(alice_client, served_project, settings):
    settings.CRON_MIN_INTERVAL_SECONDS = 300
    resp = create(alice_client, served_project, schedule="*/2 * * * *")
    assert resp.status_code == 400 and resp.json()["code"] == "schedule_too_frequent"
    assert create(alice_client, served_project, schedule="*/5 * * * *").status_code == 201


def test_limit_per_project(alice_client, served_project, settings):
    settings.CRON_MAX_JOBS_PER_PROJECT = 1
    assert create(alice_client, served_project).status_code == 201
    resp = create(alice_client, served_project)
    assert resp.status_code == 409 and resp.json()["code"] == "limit_reached"
    assert CronJob.objects.count() == 1


def test_developers_read_but_do_not_change(as_user, bob, served_project):
    job = CronJobFactory(project=served_project)
    client = as_user(bob)
    assert client.get(url(served_project)).status_code == 200
    assert create(client, served_project).status_code == 403
    assert client.patch(url(served_project, f"/{job.pk}"), {"enabled": False}, format="json").status_code == 403
    assert client.delete(url(served_project, f"/{job.pk}")).status_code == 403
    assert CronJob.objects.get().enabled is True


def test_patch_toggles_reschedules_and_rotates(alice_client, served_project):
    created = create(alice_client, served_project).json()
    detail = url(served_project, f"/{created['id']}")
    resp = alice_client.patch(detail, {"enabled": False, "schedule": "*/15 * * * *", "path": "/tasks/sweep"},
                              format="json")
    assert resp.status_code == 200 and "secret" not in resp.json()
    job = CronJob.objects.get()
    assert (job.enabled, job.schedule, job.path) == (False, "*/15 * * * *", "/tasks/sweep")
    assert alice_client.patch(detail, {"schedule": "nope"}, format="json").status_code == 400
    assert CronJob.objects.get().schedule == "*/15 * * * *"
    rotated = alice_client.patch(detail, {"rotateSecret": True}, format="json").json()
    assert rotated["secret"] != created["secret"]
    assert decrypt(CronJob.objects.get().secret_encrypted) == rotated["secret"]
    assert alice_client.delete(detail).json() == {"deleted": True}
    assert not CronJob.objects.exists()
    assert alice_client.delete(detail).status_code == 404


def test_a_due_run_calls_the_app_through_the_edge_with_the_secret(alice_client, served_project, httpserver, clock,
                                                                  tick):
    secret = create(alice_client, served_project, path="/api/cron?task=digest").json()["secret"]
    httpserver.expect_request("/api/cron", query_string="task=digest", method="GET",
                              headers={"x-svc-cron-secret": secret}).respond_with_data("digest sent " + "x" * 3000)
    clock(10, 0, 59)
    assert tick() == 0  # created at 10:00:30: the 10:00 minute is not its to run
    clock(10, 1, 2)
    assert tick() == 1
    assert len(httpserver.log) == 1
    request, _ = httpserver.log[0]
    assert request.headers["X-Forwarded-Host"] == f"{served_project.slug}.localhost:8000"
    run = CronRun.objects.get()
    assert run.status == "succeeded" and run.status_code == 200 and run.attempts == 1
    assert run.scheduled_for == datetime(2026, 11, 24, 10, 1, tzinfo=UTC)
    assert run.response_head.startswith("digest sent") and len(run.response_head) == 1024
    runs = alice_client.get(url(served_project, f"/{run.job_id}/runs")).json()["items"]
    assert runs[0]["status"] == "succeeded" and runs[0]["statusCode"] == 200
    assert when(runs[0]["scheduledFor"]) == run.scheduled_for and runs[0]["durationMs"] is not None
    job = alice_client.get(url(served_project)).json()["items"][0]
    assert job["lastRun"]["id"] == run.pk and when(job["nextRuns"][0]) == datetime(2026, 11, 24, 10, 2, tzinfo=UTC)


def test_two_ticks_in_the_same_minute_run_once(served_project, httpserver, clock, tick):
    """A second beat process (or a restarted one) ticking in the same minute loses the unique row."""
    CronJobFactory(project=served_project, schedule="*/5 * * * *")
    httpserver.expect_request("/api/cron").respond_with_data("ok")
    clock(10, 5, 0)
    assert tick() == 1
    clock(10, 5, 40)
    assert tick() == 0
    clock(10, 6, 1)  # restarted late: the 10:05 minute is still within grace, and still taken
    assert tick() == 0
    assert CronRun.objects.count() == 1 and len(httpserver.log) == 1


def test_a_run_still_going_makes_the_next_one_skipped(served_project, httpserver, clock, tick):
    job = CronJobFactory(project=served_project)
    clock(10, 1, 0)
    # a worker is inside the 10:01 call (claimed, started) when 10:02 comes
    CronRunFactory(job=job, scheduled_for=datetime(2026, 11, 24, 10, 1, tzinfo=UTC), status="running",
                   started_at=datetime(2026, 11, 24, 10, 1, 1, tzinfo=UTC))
    clock(10, 2, 0)
    assert tick() == 0
    skipped = CronRun.objects.get(scheduled_for=datetime(2026, 11, 24, 10, 2, tzinfo=UTC))
    assert skipped.status == "skipped" and "still going" in skipped.error
    assert httpserver.log == []


def test_disabled_jobs_do_not_run(alice_client, served_project, httpserver, clock, tick):
    job_id = create(alice_client, served_project).json()["id"]
    alice_client.patch(url(served_project, f"/{job_id}"), {"enabled": False}, format="json")
    clock(10, 3, 0)
    assert tick() == 0
    assert not CronRun.objects.exists() and httpserver.log == []


def test_without_a_ready_production_deployment_the_run_fails_with_the_reason(workspace, clock, tick):
    project = ProjectFactory(workspace=workspace)
    Deployment.objects.create(project=project, env="production", branch="main", status=Deployment.Status.ERROR)
    CronJobFactory(project=project)
    clock(10, 1, 0)
    tick()
    run = CronRun.objects.get()
    assert run.status == "failed" and run.error == "The project has no ready production deployment."
    assert run.status_code is None


def test_failures_are_retried_only_when_the_job_asks(served_project, httpserver, clock, tick):
    httpserver.expect_request("/api/cron").respond_with_response(Response("boom", status=500))
    once = CronJobFactory(project=served_project, retries=0)
    clock(10, 1, 0)
    tick()
    run = CronRun.objects.get(job=once)
    assert (run.status, run.status_code, run.attempts, run.error) == ("failed", 500, 1, "The app answered 500.")
    assert len(httpserver.log) == 1
    once.delete()
    twice = CronJobFactory(project=served_project, retries=2)
    clock(10, 2, 0)
    tick()
    run = CronRun.objects.get(job=twice)
    assert (run.status, run.attempts) == ("failed", 3)
    assert len(httpserver.log) == 4


def test_other_workspaces_cannot_see_jobs(as_user, charlie, served_project):
    job = CronJobFactory(project=served_project)
    assert as_user(charlie).get(url(served_project, f"/{job.pk}/runs")).status_code == 404


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_beat_processes_ticking_at_once_run_the_minute_once(served_project, httpserver, clock):
    """Two ticks at the same moment on two connections: the unique (job, minute) row lets one of them win."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("two writing connections at once need PostgreSQL")
    CronJobFactory(project=served_project)
    httpserver.expect_request("/api/cron").respond_with_data("ok")
    clock(10, 7, 0)
    enqueued = at_once(cron_tick, 2)
    assert sorted(enqueued) == [0, 1]
    assert CronRun.objects.get().status == "succeeded" and len(httpserver.log) == 1


def test_a_job_with_a_branch_calls_that_branch_s_newest_ready_deployment(served_project, httpserver, clock, tick):
    from tests.platform_app.agents.factories import InstanceFactory

    staging = Deployment.objects.create(project=served_project, env="preview", branch="staging",
                                        status=Deployment.Status.READY, artifact_path="runtime",
                                        snapshot={"start": "node server.js"})
    node = served_project.production_deployment.instances.get().node
    InstanceFactory(deployment=staging, node=node, status="running", port=httpserver.port)
    CronJobFactory(project=served_project, branch="staging", path="/api/staging-only")
    httpserver.expect_request("/api/staging-only").respond_with_data("ok")
    clock(10, 1, 0)
    tick()
    assert CronRun.objects.get().status == "succeeded"
    request, _ = httpserver.log[0]
    assert request.headers["X-Forwarded-Host"].startswith(f"{served_project.slug}-{staging.pk[4:12]}.")
    CronJobFactory(project=served_project, branch="nowhere")
    clock(10, 2, 0)
    tick()
    assert CronRun.objects.get(job__branch="nowhere").error == "The branch nowhere has no ready deployment."
