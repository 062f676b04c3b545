"""Deployments for real: a hosted Git repository is cloned and built by the build task, the edge serves it."""
import os
import subprocess
import threading
import time

import pytest

from platform_app.models import Deployment, LogLine
from tests.conftest import closing, hosted_repo
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(workspace):
    return hosted_repo(workspace, "site", {
        "src/index.html": "<h1>Hello from the build</h1>",
        "src/style.css": "h1 { color: teal }",
        "src/404.html": "<h1>Lost</h1>",
    })


@pytest.fixture
def project(workspace, site, settings, tmp_path):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    settings.BUILD_ROOT = tmp_path / "builds"
    return ProjectFactory(workspace=workspace, name="Site", slug="site", git_url=site,
                          build_command="mkdir -p out && cp -r src/. out/ && echo built", output_directory="out")


def trigger(client, project, capture, execute=True, HTTP_IDEMPOTENCY_KEY=None, **body):
    body.setdefault("env", "production")
    extra = {"HTTP_IDEMPOTENCY_KEY": HTTP_IDEMPOTENCY_KEY} if HTTP_IDEMPOTENCY_KEY else {}
    with capture(execute=execute):
        return client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments", body, format="json", **extra)


def test_trigger_builds_and_the_edge_serves_it(alice_client, project, django_capture_on_commit_callbacks, client):
    resp = trigger(alice_client, project, django_capture_on_commit_callbacks)
    assert resp.status_code == 201
    body = resp.json()
    assert body["status"] == "queued" and body["env"] == "production" and body["branch"] == "main"
    deployment = Deployment.objects.get()
    assert deployment.status == "ready", deployment.error_message
    assert len(deployment.commit_sha) == 40
    detail = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()
    assert detail["status"] == "ready" and detail["url"].startswith(f"http://site-{deployment.pk[4:12]}.localhost")
    events = [e["type"] for e in alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/events").json()["items"]]
    assert events == ["queued", "building", "ready"]
    assert LogLine.objects.filter(deployment=deployment, text="built").exists()

    page = client.get("/", HTTP_HOST=f"site-{deployment.pk[4:12]}.localhost")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert page.content == b"<h1>Hello from the build</h1>"
    css = client.get("/style.css", HTTP_HOST="site.localhost")  # production alias
    assert css["Content-Type"].startswith("text/css") and "max-age=3600" in css["Cache-Control"]
    missing = client.get("/nope", HTTP_HOST="site.localhost")
    assert missing.status_code == 404 and missing.content == b"<h1>Lost</h1>"
    assert client.get("/", HTTP_HOST="other.localhost").status_code == 404


def test_failing_build_ends_in_error_with_exit_code_and_log(alice_client, project, django_capture_on_commit_callbacks):
    project.build_command = "echo about to fail && exit 3"
    project.save()
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    deployment = Deployment.objects.get()
    assert deployment.status == "error"
    assert "exited with 3" in deployment.error_message and "about to fail" in deployment.error_message
    lines = list(LogLine.objects.filter(deployment=deployment).values_list("text", flat=True))
    assert "about to fail" in lines and lines == sorted(lines, key=lines.index)


def test_unknown_branch_ends_in_error_naming_the_branch(alice_client, project, django_capture_on_commit_callbacks,
                                                        hosted_git_root):
    trigger(alice_client, project, django_capture_on_commit_callbacks, branch="no-such-branch")
    deployment = Deployment.objects.get()
    assert deployment.status == "error" and "git clone failed" in deployment.error_message
    assert "no-such-branch" in deployment.error_message
    logs = " ".join(LogLine.objects.filter(deployment=deployment).values_list("text", flat=True))
    assert str(hosted_git_root) not in deployment.error_message + logs  # no server path in the API
    assert "error" in [e.type for e in deployment.events.all()]


def test_build_timeout_kills_the_process(alice_client, project, settings, django_capture_on_commit_callbacks):
    settings.BUILD_TIMEOUT_SECONDS = 2
    marker = f"sleep 31.{os.getpid()}"  # this run's own: another suite on the machine may run the same test
    project.build_command = marker
    project.save()
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    deployment = Deployment.objects.get()
    assert deployment.status == "error" and "time limit" in deployment.error_message
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1


def test_cancel_of_a_queued_build_is_immediate_and_of_a_finished_one_409(alice_client, project,
                                                                         django_capture_on_commit_callbacks):
    trigger(alice_client, project, django_capture_on_commit_callbacks, execute=False)
    deployment = Deployment.objects.get()
    assert alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()["queuePosition"] == 1
    resp = alice_client.post(f"/v1/orgs/acme/deployments/{deployment.pk}/cancel")
    assert resp.status_code == 201 and resp.json()["status"] == "canceled"
    from platform_app.tasks.deployments import deployment_build

    assert deployment_build(deployment.pk) == "skipped"  # the queued task finds it canceled
    again = alice_client.post(f"/v1/orgs/acme/deployments/{deployment.pk}/cancel")
    assert again.status_code == 409


@pytest.mark.postgres
def test_cancel_of_a_running_build_kills_its_process_group(transactional_db, alice, as_user, project):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("two threads writing at once need PostgreSQL (CI sets DATABASE_URL)")
    from platform_app.tasks.deployments import deployment_build

    project.build_command = "sleep 32.5 & sleep 32.5; wait"
    project.save()
    # queued directly: the worker below is the build task, run in a thread so the test can cancel it
    deployment = DeploymentFactory(project=project, env="preview", branch="main", trigger="api")
    result = {}
    def build():
        result.update(status=deployment_build(deployment.pk))

    worker = threading.Thread(target=closing(build))
    worker.start()
    deadline = time.monotonic() + 20
    while not LogLine.objects.filter(deployment=deployment, text__startswith="$ sleep").exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    resp = as_user(alice).post(f"/v1/orgs/acme/deployments/{deployment.pk}/cancel")
    assert resp.status_code == 201
    worker.join(timeout=20)
    assert result["status"] == "canceled"
    assert Deployment.objects.get(pk=deployment.pk).status == "canceled"
    assert subprocess.run(["pgrep", "-f", "sleep 32.5"], capture_output=True).returncode == 1


def test_sse_replays_from_last_event_id_and_ends(alice_client, project, django_capture_on_commit_callbacks):
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    deployment = Deployment.objects.get()
    resp = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream", HTTP_LAST_EVENT_ID="1")
    assert resp["Content-Type"] == "text/event-stream"
    text = sse_body(resp).decode()
    assert "id: 1\n" not in text and "id: 2\n" in text
    assert text.rstrip().endswith("event: end\ndata: ready")


def test_stream_accepts_a_ws_token(alice_client, api, project, django_capture_on_commit_callbacks):
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    deployment = Deployment.objects.get()
    token = alice_client.post("/v1/auth/ws-token").json()["token"]
    resp = api.get(f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream?token={token}")
    assert resp.status_code == 200 and "event: end" in sse_body(resp).decode()
    assert api.get(f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream?token=forged").status_code == 401


def test_trigger_validation_and_lists(alice_client, project, django_capture_on_commit_callbacks):
    bad = trigger(alice_client, project, django_capture_on_commit_callbacks, env="moon")
    assert bad.status_code == 400 and Deployment.objects.count() == 0
    trigger(alice_client, project, django_capture_on_commit_callbacks, env="preview")
    assert alice_client.get("/v1/orgs/acme/deployments?status=ready").json()["items"][0]["env"] == "preview"
    assert alice_client.get("/v1/orgs/acme/deployments?status=weird").status_code == 400
    assert len(alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/deployments").json()["items"]) == 1


def test_viewer_cannot_deploy(as_user, workspace, project):
    from tests.factories import MembershipFactory

    viewer = MembershipFactory(workspace=workspace, role="viewer").user
    resp = as_user(viewer).post(f"/v1/orgs/acme/projects/{project.pk}/deployments", {"env": "preview"}, format="json")
    assert resp.status_code == 403 and Deployment.objects.count() == 0


def test_rollback_points_production_at_the_earlier_build(alice_client, project, django_capture_on_commit_callbacks,
                                                         client):
    assert alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/rollback").status_code == 409
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    first = Deployment.objects.get()
    project.build_command = "mkdir -p out && echo '<h1>v2</h1>' > out/index.html"
    project.save()
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    assert b"v2" in client.get("/", HTTP_HOST="site.localhost").content
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/rollback", {}, format="json")
    assert resp.status_code == 201 and resp.json()["id"] == first.pk
    assert b"Hello from the build" in client.get("/", HTTP_HOST="site.localhost").content
    assert Deployment.objects.count() == 2  # nothing rebuilt
    sites = alice_client.get("/v1/orgs/acme/static-sites").json()["items"]
    assert sites[0]["deploymentId"] == first.pk


def test_deploy_hook_triggers_and_unknown_secret_is_404(alice_client, api, project, django_capture_on_commit_callbacks):
    created = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/deploy-hooks", {"name": "cms"}, format="json")
    assert created.status_code == 201
    url = created.json()["url"]
    secret = url.rsplit("/", 1)[1]
    from platform_app.models import DeployHook

    assert DeployHook.objects.get().secret_hash != secret
    with django_capture_on_commit_callbacks(execute=True):
        fired = api.post(f"/v1/hooks/deploy/{secret}")
    assert fired.status_code == 200 and fired.json()["trigger"] == "hook"
    assert Deployment.objects.get().status == "ready"
    assert api.post("/v1/hooks/deploy/dh_nope").status_code == 404
    hook_id = created.json()["id"]
    assert alice_client.delete(f"/v1/orgs/acme/projects/{project.pk}/deploy-hooks/{hook_id}").status_code == 200
    assert api.post(f"/v1/hooks/deploy/{secret}").status_code == 404


def test_idempotency_key_does_not_build_twice(alice_client, project, django_capture_on_commit_callbacks):
    first = trigger(alice_client, project, django_capture_on_commit_callbacks, HTTP_IDEMPOTENCY_KEY="retry-1")
    again = trigger(alice_client, project, django_capture_on_commit_callbacks, HTTP_IDEMPOTENCY_KEY="retry-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"] and Deployment.objects.count() == 1


def test_needs_redeploy_after_env_changes(alice_client, project, django_capture_on_commit_callbacks):
    trigger(alice_client, project, django_capture_on_commit_callbacks)
    deployment = Deployment.objects.get()
    url = f"/v1/orgs/acme/deployments/{deployment.pk}"
    assert alice_client.get(url).json()["needsRedeploy"] is False
    alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/env", {"key": "API_URL", "value": "x",
                                                                   "target": ["production"]}, format="json")
    assert alice_client.get(url).json()["needsRedeploy"] is True
    assert deployment.snapshot["env"]["names"] == []


@pytest.mark.integration
@pytest.mark.skipif(not __import__("os").environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it)")
def test_build_through_a_real_worker_streams_live_over_redis(transactional_db, alice, as_user, project):
    """The trigger goes through Redis to a real worker; the SSE stream follows the build live."""
    from celery.contrib.testing.worker import start_worker

    from config.celery_app import app

    client = as_user(alice)
    project.build_command = "mkdir -p out && cp -r src/. out/ && for i in 1 2 3; do echo step $i; sleep 0.3; done"
    project.save()
    app.conf.task_always_eager = False
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            resp = client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments", {"env": "production"}, format="json")
            assert resp.status_code == 201 and resp.json()["status"] == "queued"
            stream = client.get(f"/v1/orgs/acme/deployments/{resp.json()['id']}/logs/stream")
            text = sse_body(stream).decode()  # follows until the end event
    finally:
        app.conf.task_always_eager = True
    assert "data: step 3" in text and text.rstrip().endswith("data: ready")
    assert Deployment.objects.get().status == "ready"
