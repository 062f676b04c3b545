"""Finished builds' logs leave the database for artifact storage (services/deployments/log_archive.py): read through
the API (`GET .../logs` with `lines=` and `after=`, the stream with Last-Event-ID) they answer the same before and
after, on the filesystem and in an S3-compatible bucket; the rows are gone; a running build, a recent one and one a
log drain has not sent yet are not archived; a second run changes nothing; LOG_RETENTION_DAYS deletes and says so."""
import gzip
import io
import json
from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.utils import timezone

from platform_app.models import Deployment, LogDrain, LogLine
from platform_app.services.deployments import artifacts
from platform_app.services.deployments.deployments import log_append
from platform_app.services.deployments.log_archive import log_archive
from platform_app.tasks.automation import drains_deliver
from platform_app.tasks.deployments import deployment_logs_archive
from tests.conftest import at_once
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.deployments.test_log_stream import URL, events, log_ids
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.s3_server import (ARTIFACTS_BUCKET as BUCKET, artifacts_bucket,  # noqa: F401
                                                    s3_endpoint)  # noqa: F401 - fixtures
from tests.sse import sse_body

pytestmark = pytest.mark.django_db

LOGS = "/v1/orgs/acme/deployments/{}/logs"


@pytest.fixture
def store(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}
    return tmp_path / "store"


def finished(workspace, *, lines: int, status="ready", minutes_ago=30, slug="site", env="production"):
    project = ProjectFactory(workspace=workspace, name=slug.title(), slug=slug, git_url="https://git.example.com/x.git")
    deployment = DeploymentFactory(project=project, env=env, branch="main", status="building")
    for n in range(1, lines + 1):
        log_append(deployment, f"step {n}: compiled", stream="system" if n == 1 else "build")
    Deployment.objects.filter(pk=deployment.pk).update(
        status=status, finished_at=timezone.now() - timedelta(minutes=minutes_ago))
    return deployment


def replay(client, deployment, **headers) -> str:
    return sse_body(client.get(URL.format(deployment.pk), **headers)).decode()


def read(client, deployment, query="") -> dict:
    resp = client.get(LOGS.format(deployment.pk) + query)
    assert resp.status_code == 200, resp.content
    return resp.json()


def every_read(client, deployment) -> dict:
    """What a reader sees of a 1,200-line log through the API: the whole stream, a Last-Event-ID replay, the
    default tail, `lines=`, and a page forward with `after=`."""
    return {"stream": replay(client, deployment), "resumed": replay(client, deployment, HTTP_LAST_EVENT_ID="1150"),
            "tail": read(client, deployment), "lines": read(client, deployment, "?lines=3"),
            "after": read(client, deployment, "?after=498&lines=4"), "clamped": read(client, deployment, "?lines=9999")}


def archived_lines(raw: bytes) -> list[dict]:
    return [json.loads(row) for row in gzip.decompress(raw).decode().splitlines()]


# Archiving ----------------------------------------------------------------------------------------

def test_a_finished_log_reads_the_same_from_its_archive_and_leaves_the_table(alice, alice_client, workspace, store,
                                                                            client):
    done = finished(workspace, lines=1200)  # more than a stream's page of 500
    building = finished(workspace, lines=3, status="building", slug="busy")
    recent = finished(workspace, lines=2, minutes_ago=1, slug="recent")  # drains may not have sent it yet
    before = every_read(alice_client, done)
    assert log_ids(before["resumed"]) == list(range(1151, 1201)) and events(before["resumed"])[-1] == ("", "end",
                                                                                                      "ready")
    assert [line["seq"] for line in before["tail"]["lines"]] == list(range(1101, 1201))  # the last 100
    assert [line["text"] for line in before["lines"]["lines"]] == [f"step {n}: compiled" for n in (1198, 1199, 1200)]
    assert [line["seq"] for line in before["after"]["lines"]] == [499, 500, 501, 502]
    assert len(before["clamped"]["lines"]) == 1200 and before["tail"]["expiredAt"] is None
    assert before["lines"]["status"] == "ready" and before["lines"]["deploymentId"] == done.pk
    client.force_login(alice)
    page_before = client.get(f"/dashboard/acme/deployments/{done.pk}/").content.decode()

    assert deployment_logs_archive.run() == 1
    done.refresh_from_db()
    assert done.log_archive == f"logs/{done.pk}.jsonl.gz" and done.log_lines_archived == 1200
    assert not LogLine.objects.filter(deployment=done).exists()
    assert LogLine.objects.filter(deployment__in=[building, recent]).count() == 5
    kept = archived_lines((store / done.log_archive).read_bytes())
    assert [row["seq"] for row in kept] == list(range(1, 1201))
    assert kept[0]["stream"] == "system" and kept[0]["text"] == "step 1: compiled" and kept[1]["stream"] == "build"

    assert every_read(alice_client, done) == before
    page = client.get(f"/dashboard/acme/deployments/{done.pk}/").content.decode()
    assert "step 1200: compiled" in page and page.count("compiled") == page_before.count("compiled")

    assert deployment_logs_archive.run() == 0  # nothing left to do: a second run changes nothing
    assert log_archive(done.pk) is False and (store / done.log_archive).stat().st_size > 0
    assert sorted(p.name for p in (store / "logs").iterdir()) == [f"{done.pk}.jsonl.gz"]
    assert every_read(alice_client, done) == before

    log_append(done, "a late line")  # numbered after the archive, read after it
    assert log_ids(replay(alice_client, done))[-2:] == [1200, 1201]
    assert [line["text"] for line in read(alice_client, done, "?lines=2")["lines"]] == ["step 1200: compiled",
                                                                                       "a late line"]


def test_an_archive_in_s3_compatible_storage_reads_the_same(alice_client, workspace, artifacts_bucket):
    done = finished(workspace, lines=30, status="error")
    before = (replay(alice_client, done), replay(alice_client, done, HTTP_LAST_EVENT_ID="25"),
              read(alice_client, done, "?lines=5"), read(alice_client, done, "?after=10&lines=3"))

    assert deployment_logs_archive.run() == 1
    listed = artifacts_bucket.list_objects_v2(Bucket=BUCKET)["Contents"]
    assert [o["Key"] for o in listed] == [f"logs/{done.pk}.jsonl.gz"]
    raw = artifacts_bucket.get_object(Bucket=BUCKET, Key=f"logs/{done.pk}.jsonl.gz")["Body"].read()
    assert [row["text"] for row in archived_lines(raw)] == [f"step {n}: compiled" for n in range(1, 31)]
    assert not LogLine.objects.filter(deployment=done).exists()
    after = (replay(alice_client, done), replay(alice_client, done, HTTP_LAST_EVENT_ID="25"),
             read(alice_client, done, "?lines=5"), read(alice_client, done, "?after=10&lines=3"))
    assert after == before and log_ids(after[1]) == [26, 27, 28, 29, 30] and events(after[1])[-1][2] == "error"
    assert deployment_logs_archive.run() == 0


def test_a_running_or_canceled_build_and_the_batch_size(alice_client, workspace, store, settings):
    settings.LOG_ARCHIVE_BATCH = 2
    running = finished(workspace, lines=2, status="building", minutes_ago=120, slug="running")
    deploying = finished(workspace, lines=2, status="deploying", minutes_ago=120, slug="deploying")
    old = [finished(workspace, lines=2, status=status, minutes_ago=60 - n, slug=f"done{n}")
           for n, status in enumerate(("canceled", "ready", "error"))]
    assert deployment_logs_archive.run() == 2  # the two oldest
    assert [bool(Deployment.objects.get(pk=d.pk).log_archive) for d in old] == [True, True, False]
    assert deployment_logs_archive.run() == 1 and deployment_logs_archive.run() == 0
    assert LogLine.objects.filter(deployment__in=[running, deploying]).count() == 4
    assert [line["seq"] for line in read(alice_client, running)["lines"]] == [1, 2]
    assert not Deployment.objects.filter(pk__in=[running.pk, deploying.pk]).exclude(log_archive="").exists()


def test_lines_no_log_drain_has_sent_yet_stay_until_it_has(alice_client, workspace, store, httpserver, travel):
    from tests.platform_app.automation.test_drains import create

    done = finished(workspace, lines=0, slug="drained")
    other = finished(workspace, lines=0, slug="other", env="preview")
    for drain in ({}, {"sources": ["runtime"]}, {"environments": ["staging"]}):
        assert create(alice_client, done.project, httpserver, **drain).status_code == 201
    assert create(alice_client, other.project, httpserver).status_code == 201
    LogDrain.objects.filter(project=other.project).update(status=LogDrain.Status.PAUSED)
    for deployment in (done, other):
        for n in range(1, 4):
            log_append(deployment, f"line {n}")

    # `done`'s build drain has not sent its lines; `other`'s drain is paused, which holds nothing back
    assert deployment_logs_archive.run() == 1
    assert Deployment.objects.get(pk=other.pk).log_archive and not LogLine.objects.filter(deployment=other).exists()
    assert LogLine.objects.filter(deployment=done).count() == 3 and not Deployment.objects.get(pk=done.pk).log_archive

    httpserver.expect_request("/in", method="POST").respond_with_data("ok")
    travel(10)
    drains_deliver()
    assert [e["message"] for e in json.loads(httpserver.log[0][0].get_data())] == ["line 1", "line 2", "line 3"]
    assert deployment_logs_archive.run() == 1
    assert not LogLine.objects.filter(deployment=done).exists()
    assert [line["text"] for line in read(alice_client, done)["lines"]] == ["line 1", "line 2", "line 3"]


@pytest.mark.postgres
def test_two_runs_at_once_archive_a_log_once(transactional_db, workspace, store):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): two connections racing for one row")
    done = finished(workspace, lines=300)
    assert sorted(at_once(lambda: log_archive(done.pk), 4)) == [False, False, False, True]
    done.refresh_from_db()
    assert [row["seq"] for row in archived_lines((store / done.log_archive).read_bytes())] == list(range(1, 301))
    assert not LogLine.objects.filter(deployment=done).exists()
    assert sorted(p.name for p in (store / "logs").iterdir()) == [f"{done.pk}.jsonl.gz"]


def test_a_log_without_lines_is_marked_archived_without_an_object(alice_client, workspace, store):
    empty = finished(workspace, lines=0, status="canceled")
    assert deployment_logs_archive.run() == 1 and deployment_logs_archive.run() == 0
    empty.refresh_from_db()
    assert empty.log_archive == "-" and not list(store.glob("logs/*"))
    assert events(replay(alice_client, empty)) == [("", "end", "canceled")]
    assert read(alice_client, empty)["lines"] == []


# The API ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["?lines=abc", "?lines=0", "?lines=-3", "?lines=1.5", "?lines=", "?after=x",
                                   "?after=-1", "?after=" + "9" * 40])
def test_bad_lines_and_after_are_400_before_and_after_archiving(alice_client, workspace, store, query):
    done = finished(workspace, lines=3)
    for _ in range(2):
        resp = alice_client.get(LOGS.format(done.pk) + query)
        assert resp.status_code == 400 and resp.json()["code"] == "validation_error", resp.content
        name = query[1:].split("=")[0]
        assert name in resp.json()["details"]
        deployment_logs_archive.run()
    assert Deployment.objects.get(pk=done.pk).log_archive


def test_the_read_scope_is_needed(as_token, alice, workspace, store):
    done = finished(workspace, lines=3)
    deployment_logs_archive.run()
    resp = as_token(alice, scopes=["env:read"]).get(LOGS.format(done.pk))
    assert resp.status_code == 403 and resp.json()["code"] == "insufficient_scope"
    assert as_token(alice, scopes=["read"]).get(LOGS.format(done.pk)).json()["lines"][0]["text"] == "step 1: compiled"


# Retention ----------------------------------------------------------------------------------------

def test_retention_deletes_old_logs_and_the_api_says_so(alice, alice_client, client, workspace, store, settings):
    from tests.platform_app.automation.factories import LogDrainFactory

    settings.LOG_RETENTION_DAYS = 30
    old = finished(workspace, lines=4, minutes_ago=60 * 24 * 31)
    kept = finished(workspace, lines=4, minutes_ago=60 * 24 * 29, slug="kept")
    assert log_archive(old.pk) and log_archive(kept.pk)
    held = finished(workspace, lines=2, minutes_ago=60 * 24 * 40, slug="held")
    LogDrainFactory(project=held.project, build_cursor=0)  # it never sent them: they stay rows, until expired

    assert deployment_logs_archive.run() == 2  # nothing to archive; two logs expired
    old.refresh_from_db()
    held.refresh_from_db()
    assert old.log_expired_at is not None and old.log_archive == "" and not (store / f"logs/{old.pk}.jsonl.gz").exists()
    assert held.log_expired_at is not None and not LogLine.objects.filter(deployment=held).exists()
    body = read(alice_client, old, "?lines=10")
    assert body["lines"] == [] and body["expiredAt"] == old.log_expired_at.isoformat().replace("+00:00", "Z")
    assert read(alice_client, held, "?after=0")["lines"] == [] and read(alice_client, held)["expiredAt"]
    assert alice_client.get(f"/v1/orgs/acme/deployments/{old.pk}").json()["logExpiredAt"] == body["expiredAt"]
    resp = alice_client.get(URL.format(old.pk))
    assert resp["X-Log-Expired-At"] == old.log_expired_at.isoformat()
    text = sse_body(resp).decode()
    assert log_ids(text) == [] and events(text)[-1] == ("", "end", "ready")
    client.force_login(alice)
    page = client.get(f"/dashboard/acme/deployments/{old.pk}/")
    assert page.status_code == 200 and "This log was deleted on" in page.content.decode()

    kept.refresh_from_db()
    assert kept.log_expired_at is None and artifacts.storage().exists(kept.log_archive)
    assert [line["seq"] for line in read(alice_client, kept)["lines"]] == [1, 2, 3, 4]
    assert "X-Log-Expired-At" not in alice_client.get(URL.format(kept.pk))
    assert alice_client.get(f"/v1/orgs/acme/deployments/{kept.pk}").json()["logExpiredAt"] is None

    expired_at = old.log_expired_at
    assert deployment_logs_archive.run() == 0  # a second run changes nothing
    old.refresh_from_db()
    assert old.log_expired_at == expired_at
    log_append(old, "a line after the log expired")  # numbered on, never reusing a deleted line's number
    assert [line["seq"] for line in read(alice_client, old)["lines"]] == [5]


def test_an_archive_storage_cannot_read_answers_the_rows_it_has_not_a_500(alice_client, workspace, store):
    done = finished(workspace, lines=3)
    deployment_logs_archive.run()
    done.refresh_from_db()
    (store / done.log_archive).unlink()  # lost outside the platform
    log_append(done, "written later")
    assert [line["text"] for line in read(alice_client, done)["lines"]] == ["written later"]
    assert log_ids(replay(alice_client, done)) == [4]


# Other readers ------------------------------------------------------------------------------------

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
    admin = client.get(f"/admin/platform_app/deployment/{quote(done.pk)}/change/").content.decode()
    assert "Cannot find module" in admin and "step 1: compiled" in admin


def test_the_archive_is_gzip_json_lines_one_line_each(workspace, store):
    done = finished(workspace, lines=0)
    log_append(done, 'quotes " and \\ and ünïcode and a\nnewline')
    assert log_archive(done.pk)
    done.refresh_from_db()
    with gzip.open(io.BytesIO((store / done.log_archive).read_bytes()), "rt") as rows:
        (row,) = [json.loads(r) for r in rows]
    assert row["seq"] == 1 and row["text"] == 'quotes " and \\ and ünïcode and a\nnewline' and row["at"]


@pytest.mark.postgres
def test_the_log_table_is_vacuumed_after_a_fixed_number_of_dead_rows_on_postgresql(db):
    """Archived lines leave dead rows: vacuumed after 20,000 of them, not a fifth of the table, their space goes to
    the next builds' lines and the table keeps its size (bench/scale.py, the log table under builds)."""
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL table setting; SQLite reuses a deleted row's space by itself")
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [LogLine._meta.db_table])
        options = set(cursor.fetchone()[0] or [])
    assert {"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=20000"} <= options
