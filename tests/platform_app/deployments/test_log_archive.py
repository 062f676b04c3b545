"""Finished builds' logs leave the database for artifact storage (services/deployments/log_archive.py): the stream
replays them the same (Last-Event-ID included), the page, the admin, MCP and the doctor read them the same, the
rows are gone, a running build is never archived, a second run changes nothing, and LOG_RETENTION_DAYS deletes."""
import gzip
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.models import Deployment, LogLine
from platform_app.services.deployments import artifacts
from platform_app.services.deployments.deployments import log_append
from platform_app.tasks.deployments import deployment_logs_archive
from tests.platform_app.deployments.test_log_stream import URL, events, log_ids
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}
    return tmp_path / "store"


def finished(workspace, *, lines: int, status="ready", minutes_ago=30, slug="site"):
    project = ProjectFactory(workspace=workspace, name=slug.title(), slug=slug, git_url="https://git.example.com/x.git")
    deployment = DeploymentFactory(project=project, env="production", branch="main", status="building")
    for n in range(1, lines + 1):
        log_append(deployment, f"step {n}: compiled", stream="system" if n == 1 else "build")
    Deployment.objects.filter(pk=deployment.pk).update(
        status=status, finished_at=timezone.now() - timedelta(minutes=minutes_ago))
    return deployment


def replay(client, deployment, **headers) -> str:
    return b"".join(client.get(URL.format(deployment.pk), **headers).streaming_content).decode()


def test_a_finished_log_reads_the_same_from_its_archive_and_leaves_the_table(alice, alice_client, workspace, store,
                                                                            client):
    done = finished(workspace, lines=1200)  # more than a stream's page of 500
    building = finished(workspace, lines=3, status="building", slug="busy")
    recent = finished(workspace, lines=2, minutes_ago=1, slug="recent")  # drains may not have sent it yet
    before = replay(alice_client, done)
    client.force_login(alice)
    page_before = client.get(f"/dashboard/acme/deployments/{done.pk}/").content.decode()

    assert deployment_logs_archive.run() == 1
    done.refresh_from_db()
    assert done.log_archive == f"logs/{done.pk}.jsonl.gz" and done.log_lines_archived == 1200
    assert not LogLine.objects.filter(deployment=done).exists()
    assert LogLine.objects.filter(deployment__in=[building, recent]).count() == 5
    with gzip.open(store / done.log_archive, "rt") as archive:
        first = json.loads(archive.readline())
    assert first["seq"] == 1 and first["stream"] == "system" and first["text"] == "step 1: compiled"

    assert replay(alice_client, done) == before
    resumed = replay(alice_client, done, HTTP_LAST_EVENT_ID="1150")
    assert log_ids(resumed) == list(range(1151, 1201)) and events(resumed)[-1] == ("", "end", "ready")
    page = client.get(f"/dashboard/acme/deployments/{done.pk}/").content.decode()
    assert "step 1200: compiled" in page and page.count("compiled") == page_before.count("compiled")
    assert deployment_logs_archive.run() == 0  # nothing left to do: a second run changes nothing

    log_append(done, "a late line")  # numbered after the archive, read after it
    assert log_ids(replay(alice_client, done))[-2:] == [1200, 1201]


def test_the_admin_and_mcp_tails_and_the_doctor_read_archived_logs(alice, workspace, store, client, settings):
    from platform_app.services.deployments.doctor import diagnose
    from tests.factories import SuperuserFactory

    done = finished(workspace, lines=5, status="error")
    log_append(done, "Error: Cannot find module 'express'")
    Deployment.objects.filter(pk=done.pk).update(finished_at=timezone.now() - timedelta(hours=1))
    expected = [f.rule for f in diagnose(done)]
    assert deployment_logs_archive.run() == 1 and not LogLine.objects.filter(deployment=done).exists()
    assert [f.rule for f in diagnose(done)] == expected and expected
    client.force_login(SuperuserFactory())
    admin = client.get(f"/admin/platform_app/deployment/{done.pk}/change/").content.decode()
    assert "Cannot find module" in admin and "step 1: compiled" in admin


def test_retention_deletes_old_logs_and_says_so(alice_client, workspace, store, settings):
    settings.LOG_RETENTION_DAYS = 30
    old = finished(workspace, lines=4, minutes_ago=60 * 24 * 31)
    kept = finished(workspace, lines=4, minutes_ago=60 * 24 * 29, slug="kept")
    deployment_logs_archive.run()
    old.refresh_from_db()
    assert old.log_expired_at is not None and old.log_archive == "" and not list(store.glob(f"logs/{old.pk}*"))
    assert log_ids(replay(alice_client, old)) == [] and events(replay(alice_client, old))[-1] == ("", "end", "ready")
    kept.refresh_from_db()
    assert kept.log_expired_at is None and kept.log_archive and log_ids(replay(alice_client, kept)) == [1, 2, 3, 4]
    assert artifacts.storage().exists(kept.log_archive)


def test_a_log_without_lines_is_marked_archived_without_an_object(alice_client, workspace, store):
    empty = finished(workspace, lines=0, status="canceled")
    assert deployment_logs_archive.run() == 1 and deployment_logs_archive.run() == 0
    empty.refresh_from_db()
    assert empty.log_archive == "-" and not list(store.glob("logs/*"))
    assert events(replay(alice_client, empty)) == [("", "end", "canceled")]
