"""Dedicated databases through the HTTP API without a cluster: bad input is 400 naming the field and writes
nothing, unknown ids are 404 (a backup of another database too), roles, the 409s, the platform without the
feature configured, and the outside provisioner with its internal mark-ready route."""
import json

import pytest

from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup
from platform_app.services.env.crypto import decrypt
from platform_app.services.resources.managed import managed_endpoints, managed_env
from platform_app.services.resources.variables import local_port
from tests.conftest import bearer_client
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.dedicated_dbs_fixtures import (DedicatedDatabaseBackupFactory,
                                                                 DedicatedDatabaseFactory)

pytestmark = pytest.mark.django_db

INTERNAL = "internal-token-for-tests-000000000000"


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop")


@pytest.fixture
def platform_cluster(settings):
    """Configured, but no test here lets a job reach it: their requests never commit."""
    settings.DEDICATED_DB_PROVISIONER = "postgres"
    settings.DEDICATED_DB_POSTGRES_URL = "postgres://admin:admin-secret@10.0.0.5:5432/postgres"
    return settings


@pytest.fixture
def external(settings):
    settings.DEDICATED_DB_PROVISIONER = "external"
    settings.INTERNAL_API_TOKEN = INTERNAL
    return settings


def url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/dedicated-dbs{rest}"


def on_cluster(project, **fields):
    """A ready database of the platform's cluster (nothing made there: these tests never run its jobs)."""
    return DedicatedDatabaseFactory(project=project, provisioner="postgres", role_name=f"ddb_{fields.get('name', 'x')}",
                                    database_name=f"ddb_{fields.get('name', 'x')}", **fields)


@pytest.mark.parametrize("body", [{"name": ""}, {"name": "Main"}, {"name": "1db"}, {"name": "db_1"},
                                  {"name": "db-"}, {"name": "x" * 41}, {"name": 5}, {}, {"name": "ok", "size": 1},
                                  {"name": "a\u00e9"}])
def test_bad_input_is_400_naming_the_field(alice_client, project, platform_cluster, body):
    resp = alice_client.post(url(project), body, format="json")
    assert resp.status_code == 400, resp.json()
    assert resp.json()["code"] == "validation_error" and set(resp.json()["details"]) <= {"name", "size"}
    assert not DedicatedDatabase.objects.exists()


def test_names_are_unique_in_a_project_and_limited(alice_client, project, platform_cluster):
    platform_cluster.DEDICATED_DB_MAX_PER_PROJECT = 2
    assert alice_client.post(url(project), {"name": "main"}, format="json").status_code == 201
    taken = alice_client.post(url(project), {"name": "main"}, format="json")
    assert taken.status_code == 409 and taken.json()["code"] == "name_taken"
    assert alice_client.post(url(project), {"name": "second"}, format="json").status_code == 201
    full = alice_client.post(url(project), {"name": "third"}, format="json")
    assert full.status_code == 409 and full.json()["code"] == "limit_reached"
    assert DedicatedDatabase.objects.count() == 2


def test_not_configured_is_409_naming_the_setting(alice_client, project, settings):
    settings.DEDICATED_DB_PROVISIONER, settings.DEDICATED_DB_POSTGRES_URL = "postgres", ""
    resp = alice_client.post(url(project), {"name": "main"}, format="json")
    assert resp.status_code == 409
    body = resp.json()
    assert body["code"] == "addon_unavailable" and "DEDICATED_DB_POSTGRES_URL" in body["message"]
    assert body["details"] == {"setting": "DEDICATED_DB_POSTGRES_URL"}
    database = on_cluster(project, name="old")
    for path, payload in (("/backups", {}), ("/branch", {"name": "b"}), ("/restore", {"backupId": "dbk_x"})):
        if path == "/restore":
            payload["backupId"] = DedicatedDatabaseBackupFactory(database=database).pk
        answer = alice_client.post(url(project, f"/{database.pk}{path}"), payload, format="json")
        assert answer.status_code == 409 and answer.json()["code"] == "addon_unavailable", path
    assert DedicatedDatabase.objects.count() == 1 and DedicatedDatabaseBackup.objects.count() == 1


def test_unknown_ids_and_other_databases_backups_are_404(alice_client, project, platform_cluster):
    database, other = on_cluster(project, name="one"), on_cluster(project, name="two")
    theirs = DedicatedDatabaseBackupFactory(database=other)
    for method, path, body in (("get", "/ddb_unknown", None), ("get", "/ddb_unknown/backups", None),
                               ("post", "/ddb_unknown/backups", {}), ("delete", "/ddb_unknown", None),
                               ("post", "/ddb_unknown/branch", {"name": "b"}),
                               ("post", "/ddb_unknown/restore", {"backupId": theirs.pk})):
        resp = getattr(alice_client, method)(url(project, path), body, format="json")
        assert resp.status_code == 404 and resp.json()["code"] == "not_found", (method, path)
    for backup_id in ("dbk_unknown", theirs.pk):
        resp = alice_client.post(url(project, f"/{database.pk}/restore"), {"backupId": backup_id}, format="json")
        assert resp.status_code == 404 and resp.json()["details"] == {"backupId": ["Unknown backup."]}
    assert DedicatedDatabase.objects.get(pk=database.pk).status == "ready"
    another = ProjectFactory(workspace=project.workspace, slug="another")
    assert alice_client.get(url(another, f"/{database.pk}")).status_code == 404  # ids are per project


def test_branch_name_invalid_is_400_and_writes_nothing(alice_client, project, platform_cluster):
    source = on_cluster(project, name="main")
    for name in ("", "Feature", "feature!", "x" * 41):
        resp = alice_client.post(url(project, f"/{source.pk}/branch"), {"name": name}, format="json")
        assert resp.status_code == 400 and "name" in resp.json()["details"], name
    taken = alice_client.post(url(project, f"/{source.pk}/branch"), {"name": "main"}, format="json")
    assert taken.status_code == 409 and taken.json()["code"] == "name_taken"
    assert DedicatedDatabase.objects.count() == 1


def test_work_on_a_database_that_is_not_ready_is_409(alice_client, project, platform_cluster):
    busy = on_cluster(project, name="busy", status="restoring")
    backup = DedicatedDatabaseBackupFactory(database=busy)
    pending = DedicatedDatabaseBackupFactory(database=on_cluster(project, name="idle"), status="pending")
    for path, body in (("/backups", {}), ("/branch", {"name": "b"}), ("/restore", {"backupId": backup.pk})):
        resp = alice_client.post(url(project, f"/{busy.pk}{path}"), body, format="json")
        assert resp.status_code == 409 and resp.json()["code"] == "database_not_ready", path
    resp = alice_client.post(url(project, f"/{pending.database_id}/restore"), {"backupId": pending.pk}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "backup_not_ready"
    assert DedicatedDatabaseBackup.objects.count() == 2


def test_developers_read_but_do_not_change(bob, as_user, project, platform_cluster):
    database = on_cluster(project, name="main")
    client = as_user(bob)
    assert client.get(url(project)).json()["items"][0]["id"] == database.pk
    assert client.get(url(project, f"/{database.pk}/backups")).status_code == 200
    assert client.post(url(project), {"name": "mine"}, format="json").status_code == 403
    assert client.delete(url(project, f"/{database.pk}")).status_code == 403
    assert DedicatedDatabase.objects.count() == 1


# The outside provisioner ------------------------------------------------------------------------

def mark_url(db_id):
    return f"/v1/internal/dedicated-dbs/{db_id}/mark-ready"


READY = {"host": "pg.internal.example", "port": 6432, "database": "shop_main", "user": "shop",
         "password": "p@ss/word:1"}


def test_an_outside_provisioner_reports_the_database_ready(alice_client, project, external, api, as_user, as_token,
                                                           alice):
    body = alice_client.post(url(project), {"name": "main"}, format="json").json()
    assert body["status"] == "provisioning" and body["credentials"] is None and body["provisioner"] == "external"
    assert managed_env(project=project) == {}
    for caller in (api, as_user(alice), as_token(alice), bearer_client("wrong-internal-token")):
        resp = caller.post(mark_url(body["id"]), READY, format="json")
        assert resp.status_code == 401 and resp.json()["status"] == 401
    internal = bearer_client(INTERNAL)
    assert internal.post(mark_url("ddb_unknown"), READY, format="json").status_code == 404
    for bad in ({**READY, "port": 0}, {**READY, "host": "a b"}, {**READY, "extra": 1}, {"host": "x"}):
        resp = internal.post(mark_url(body["id"]), bad, format="json")
        assert resp.status_code == 400, bad
    assert DedicatedDatabase.objects.get().status == "provisioning"

    resp = internal.post(mark_url(body["id"]), READY, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "ready" and resp.json()["envVars"][0] == "DATABASE_URL"
    assert "credentials" not in resp.json()
    row = DedicatedDatabase.objects.get()
    assert "p@ss" not in row.credentials_encrypted and json.loads(decrypt(row.credentials_encrypted)) == READY
    port = local_port(row.pk)
    env = managed_env(project=project)
    assert env["DATABASE_URL"] == f"postgres://shop:p%40ss%2Fword%3A1@127.0.0.1:{port}/shop_main"
    assert (env["PGHOST"], env["PGPORT"], env["PGUSER"], env["PGPASSWORD"], env["PGDATABASE"]) == (
        "127.0.0.1", str(port), "shop", "p@ss/word:1", "shop_main")
    [endpoint] = managed_endpoints(project=project)
    assert (endpoint.host, endpoint.port, endpoint.local_port) == ("pg.internal.example", 6432, port)
    assert endpoint.guard == {"kind": "postgres", "user": "shop", "database": "shop_main"}
    listed = alice_client.get(url(project)).json()["items"][0]
    assert listed["status"] == "ready" and "password" not in json.dumps(listed)

    external.INTERNAL_API_TOKEN = ""  # not configured: nothing opens it
    assert bearer_client("").post(mark_url(body["id"]), READY, format="json").status_code == 401


def test_mark_ready_is_only_for_outside_provisioners(project, external):
    database = on_cluster(project, name="main", status="provisioning")
    resp = bearer_client(INTERNAL).post(mark_url(database.pk), READY, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "not_external"
    resp = bearer_client(INTERNAL).post(url(project, f"/{database.pk}/branch"), {"name": "b"}, format="json")
    assert resp.status_code == 401  # a user route: the internal token is not a user's
    assert DedicatedDatabase.objects.get().status == "provisioning"


def test_externally_provisioned_databases_are_neither_restored_nor_branched(alice_client, project, external):
    database = DedicatedDatabaseFactory(project=project, name="main")
    backup = DedicatedDatabaseBackupFactory(database=database)
    for path, body in (("/branch", {"name": "copy"}), ("/restore", {"backupId": backup.pk})):
        resp = alice_client.post(url(project, f"/{database.pk}{path}"), body, format="json")
        assert resp.status_code == 409 and resp.json()["code"] == "external_database", path
    assert DedicatedDatabase.objects.count() == 1


def test_the_sweep_fails_backups_whose_worker_vanished(project, settings, travel):
    from platform_app.tasks.dedicated_dbs import dedicated_dbs_sweep

    settings.DEDICATED_DB_COMMAND_TIMEOUT_SECONDS = 60
    backup = DedicatedDatabaseBackupFactory(database=DedicatedDatabaseFactory(project=project), status="pending")
    assert dedicated_dbs_sweep()["stale_backups"] == 0
    travel(121)
    assert dedicated_dbs_sweep()["stale_backups"] == 1
    backup.refresh_from_db()
    assert backup.status == "failed" and backup.error == "The worker making it stopped."
