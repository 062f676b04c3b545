"""Workspace answers kept whole (platform_app/api/kept.py): sent again while the workspace's answer stamp holds, and
never after a committed change to a row they show, whatever code wrote it.

These tests commit (`transactional_db`): answers are kept only outside a transaction, where the stamp moves."""
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from platform_app.api import kept
from platform_app.models import AnswerStamp, Deployment, DeploymentEvent, LogLine, Membership, Project
from platform_app.services.deployments import log_stream
from platform_app.services.deployments.deployments import log_append
from platform_app.services.env.env import env_snapshot, env_var_create, env_var_update
from tests.factories import WorkspaceFactory
from tests.platform_app.deployments.factories import DeploymentEventFactory, DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(workspace):
    project = ProjectFactory(workspace=workspace, name="Site", slug="site")
    env_var_create(project=project, key="API_URL", value="https://one.example", type="plain",
                   targets=["production"], branch=None)
    deployment = DeploymentFactory(project=project, env="production", status="ready", ready_at=timezone.now(),
                                   snapshot={"env": env_snapshot(project=project, environment="production",
                                                                 branch="main")})
    DeploymentEventFactory(deployment=deployment, type="ready")
    return project, deployment


@pytest.fixture
def client(alice, as_token):
    return as_token(alice, scopes=["read"])


def _get(client, path):
    """The answer, and whether it was a kept one: read with the token and membership lookups alone."""
    with CaptureQueriesContext(connection) as queries:
        resp = client.get(path)
    assert resp.status_code == 200, resp.content
    return resp, sum(q["sql"].startswith("SELECT") for q in queries.captured_queries) == 2


def test_an_answer_is_kept_with_its_bytes_and_headers(site, client):
    first, was_kept = _get(client, "/v1/orgs/acme/deployments")
    assert not was_kept
    again, was_kept = _get(client, "/v1/orgs/acme/deployments")
    assert was_kept
    assert again.content == first.content
    assert dict(again.headers.items()) == dict(first.headers.items())
    assert [d["status"] for d in again.json()["items"]] == ["ready"]
    # another query, another answer
    page, was_kept = _get(client, "/v1/orgs/acme/deployments?limit=1")
    assert not was_kept and len(page.json()["items"]) == 1


def test_a_change_by_queryset_update_is_seen_at_once(site, client):
    project, deployment = site
    paths = ["/v1/orgs/acme/deployments", f"/v1/orgs/acme/projects/{project.pk}/deployments",
             f"/v1/orgs/acme/deployments/{deployment.pk}"]
    for path in paths:
        client.get(path)
    before = AnswerStamp.objects.get(workspace_id=project.workspace_id).version
    # no signal, no save(): only the database sees this write
    Deployment.objects.filter(pk=deployment.pk).update(status="error", error_message="disk full")
    assert AnswerStamp.objects.get(workspace_id=project.workspace_id).version > before
    for path in paths:
        body = client.get(path).json()
        shown = body["items"][0] if "items" in body else body
        assert (shown["status"], shown["errorMessage"]) == ("error", "disk full"), path


def test_projects_events_and_variables_move_the_answers_that_show_them(site, client, alice_client):
    project, deployment = site
    assert client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()["needsRedeploy"] is False
    assert [e["type"] for e in client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/events").json()["items"]] \
        == ["ready"]
    assert client.get("/v1/orgs/acme/projects").json()["items"][0]["name"] == "Site"
    assert client.get(f"/v1/orgs/acme/projects/{project.slug}").json()["name"] == "Site"

    assert alice_client.patch(f"/v1/orgs/acme/projects/{project.pk}", {"name": "Shop"},
                              format="json").status_code == 200
    DeploymentEvent.objects.create(deployment=deployment, type="promoted")
    var = project.env_vars.get()
    env_var_update(project=project, env_id=var.pk, value="https://two.example")

    assert client.get("/v1/orgs/acme/projects").json()["items"][0]["name"] == "Shop"
    assert client.get(f"/v1/orgs/acme/projects/{project.slug}").json()["name"] == "Shop"
    assert [e["type"] for e in client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/events").json()["items"]] \
        == ["ready", "promoted"]
    assert client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()["needsRedeploy"] is True


def test_a_new_or_deleted_deployment_is_seen_at_once(site, client):
    project, deployment = site
    assert len(client.get("/v1/orgs/acme/deployments").json()["items"]) == 1
    newer = DeploymentFactory(project=project, env="production", status="ready")
    assert [d["id"] for d in client.get("/v1/orgs/acme/deployments").json()["items"]] == [newer.pk, deployment.pk]
    Deployment.objects.filter(pk=newer.pk).delete()
    assert [d["id"] for d in client.get("/v1/orgs/acme/deployments").json()["items"]] == [deployment.pk]


def test_a_place_in_the_build_queue_is_never_kept(workspace, client):
    """Builds of other workspaces move it, and they move no stamp of this one."""
    ahead = DeploymentFactory(project=ProjectFactory(workspace=WorkspaceFactory()), status="queued",
                              created_at=timezone.now() - timedelta(minutes=5))
    mine = DeploymentFactory(project=ProjectFactory(workspace=workspace), status="queued")
    assert client.get(f"/v1/orgs/acme/deployments/{mine.pk}").json()["queuePosition"] == 2
    assert client.get("/v1/orgs/acme/deployments").json()["items"][0]["queuePosition"] == 2
    Deployment.objects.filter(pk=ahead.pk).update(status="building")
    assert client.get(f"/v1/orgs/acme/deployments/{mine.pk}").json()["queuePosition"] == 1
    assert client.get("/v1/orgs/acme/deployments").json()["items"][0]["queuePosition"] == 1


def test_the_access_check_runs_for_a_kept_answer(site, alice, as_token, client):
    for _ in range(2):
        assert client.get("/v1/orgs/acme/projects").status_code == 200
    other = WorkspaceFactory(slug="elsewhere")
    Membership.objects.create(workspace=other, user=alice, role="owner")
    assert as_token(alice, scopes=["read"], workspace=other).get("/v1/orgs/acme/projects").status_code == 404
    refused = as_token(alice, scopes=["env:read"]).get("/v1/orgs/acme/projects")  # a scope that holds no `read`
    assert (refused.status_code, refused.json()["code"]) == (403, "insufficient_scope")
    Membership.objects.filter(workspace__slug="acme", user=alice).delete()
    assert client.get("/v1/orgs/acme/projects").status_code == 404


def test_roles_and_scopes_do_not_share_answers(site, alice, bob, as_token):
    clients = [as_token(alice, scopes=["read"]), as_token(bob, scopes=["read"]),
               as_token(alice, scopes=["read", "deploy"])]
    assert [_get(c, "/v1/orgs/acme/projects")[1] for c in clients] == [False, False, False]
    assert [_get(c, "/v1/orgs/acme/projects")[1] for c in clients] == [True, True, True]


def test_nothing_is_kept_inside_a_transaction(site, client):
    """Uncommitted changes have not moved the stamp: an answer read in a transaction is neither kept nor sent."""
    with transaction.atomic():
        assert [_get(client, "/v1/orgs/acme/projects")[1] for _ in range(2)] == [False, False]
        Project.objects.update(name="Renamed")
        assert client.get("/v1/orgs/acme/projects").json()["items"][0]["name"] == "Renamed"
    assert [_get(client, "/v1/orgs/acme/projects")[1] for _ in range(2)] == [False, True]


def test_answers_past_the_bound_are_not_kept(site, client, monkeypatch):
    monkeypatch.setattr(kept.answers, "max_bytes", 100)
    assert [_get(client, "/v1/orgs/acme/projects")[1] for _ in range(2)] == [False, False]


def test_a_transaction_moves_the_stamp_of_each_workspace_it_wrote(site, workspace):
    project, deployment = site
    other = ProjectFactory(workspace=WorkspaceFactory())
    before = {s.workspace_id: s.version for s in AnswerStamp.objects.all()}
    with transaction.atomic():
        Deployment.objects.filter(pk=deployment.pk).update(branch="next")
        DeploymentFactory(project=other)
        Project.objects.filter(pk=project.pk).update(name="Again")
    after = {s.workspace_id: s.version for s in AnswerStamp.objects.all()}
    assert after[workspace.pk] > before[workspace.pk]
    assert after[other.workspace_id] > before.get(other.workspace_id, 0)
    if connection.vendor == "postgresql":  # at commit, once per transaction and workspace
        assert after[workspace.pk] == before[workspace.pk] + 1


def test_every_table_the_answers_show_has_its_triggers():
    """SQLite rebuilds a table for some schema changes and drops its triggers: a migration that does so must
    create them again (migration 0037), or kept answers would outlive changes."""
    tables = {"platform_app_project", "platform_app_deployment", "platform_app_deploymentevent",
              "platform_app_envvar", "platform_app_envvarslot"}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgrelid::regclass::text, tgdeferrable FROM pg_trigger "
                           "WHERE tgname = 'answer_stamp_move'")
            found = dict(cursor.fetchall())
            assert found == dict.fromkeys(tables, True)
        else:
            cursor.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger' "
                           "AND name LIKE 'answer_stamp_move_%'")
            found = cursor.fetchall()
            assert sorted(found) == sorted((t, f"answer_stamp_move_{t}_{op}") for t in tables
                                           for op in ("delete", "insert", "update"))


def test_a_finished_log_is_replayed_whole_and_kept_until_its_deployment_changes(site, client):
    """Its lines are all there once the build ended: one read answers the stream, and the bytes are kept (reading
    no line again) until the deployment's row changes: here its log expires (LOG_RETENTION_DAYS)."""
    _, deployment = site
    for n in (1, 2, 3):
        log_append(deployment, f"step {n}")
    url = f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream"
    expected = (": stream open\n\n" + "".join(f"id: {n}\nevent: log\ndata: step {n}\n\n" for n in (1, 2, 3))
                + "event: end\ndata: ready\n\n")

    def replay(**headers):
        with CaptureQueriesContext(connection) as queries:
            resp = client.get(url, **headers)
        assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
        return sse_body(resp).decode(), any(
            "platform_app_logline" in q["sql"] for q in queries.captured_queries)

    assert replay() == (expected, True)
    assert replay() == (expected, False)  # kept
    later = expected.replace("id: 1\nevent: log\ndata: step 1\n\nid: 2\nevent: log\ndata: step 2\n\n", "")
    assert replay(HTTP_LAST_EVENT_ID="2") == (later, True)  # from another line, another answer

    LogLine.objects.filter(deployment=deployment).delete()
    Deployment.objects.filter(pk=deployment.pk).update(log_expired_at=timezone.now())
    assert replay() == (": stream open\n\nevent: end\ndata: ready\n\n", True)


def test_a_finished_log_longer_than_a_whole_answer_is_streamed_in_pages(site, client, monkeypatch):
    monkeypatch.setattr(log_stream, "REPLAY_WHOLE_LINES", 2)
    monkeypatch.setattr(log_stream, "PAGE", 2)
    _, deployment = site
    for n in (1, 2, 3):
        log_append(deployment, f"step {n}")
    expected = (": stream open\n\n" + "".join(f"id: {n}\nevent: log\ndata: step {n}\n\n" for n in (1, 2, 3))
                + "event: end\ndata: ready\n\n")
    for _ in range(2):  # the second time, known to be too long, without reading it whole first
        resp = client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream")
        assert sse_body(resp).decode() == expected


def test_the_production_server_sends_a_finished_log_as_one_complete_answer(site, alice, asgi_application):
    """Through config/asgi.py as gunicorn's workers run it: the replay is a complete response (its length known,
    one body message), not a stream kept open until its last chunk."""
    from tests.factories import ApiTokenFactory
    from tests.test_asgi_handler import call

    _, deployment = site
    log_append(deployment, "built")
    raw = "svc_asgi" + "a" * 44
    ApiTokenFactory(user=alice, scopes=["read"], raw=raw)
    sent = call(asgi_application, f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream", [],
                headers=[(b"authorization", f"Bearer {raw}".encode()), (b"accept", b"text/event-stream")])
    start, *bodies = sent
    headers = {name.lower(): value for name, value in start["headers"]}
    assert start["status"] == 200 and headers[b"content-type"] == b"text/event-stream"
    expected = b": stream open\n\nid: 1\nevent: log\ndata: built\n\nevent: end\ndata: ready\n\n"
    assert headers[b"content-length"] == str(len(expected)).encode()
    assert [(b["body"], b.get("more_body", False)) for b in bodies] == [(expected, False)]
