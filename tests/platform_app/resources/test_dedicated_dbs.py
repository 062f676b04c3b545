"""Dedicated databases on a real PostgreSQL server, through the HTTP API: a database is made with a role of its
own, written through its credentials, backed up, changed, restored (the data proves it) and branched (a copy with
its own role, which cannot open the parent); scheduled backups and their retention, the databases restores
replaced, orphans, failures that leave nothing behind, and the managed DATABASE_URL a build sees."""
import shutil

import psycopg
import pytest
from django.core.files.storage import storages

from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup, Deployment, LogLine
from platform_app.services.resources.dedicated_dbs import credentials_of
from platform_app.services.resources.managed import managed_env
from platform_app.services.resources.variables import local_port
from platform_app.tasks.dedicated_dbs import dedicated_dbs_sweep
from tests.conftest import hosted_repo
from tests.platform_app.deployments.test_builds import trigger
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.dedicated_dbs_fixtures import cluster  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

VARIABLES = ["DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"]


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop")


@pytest.fixture
def capture(django_capture_on_commit_callbacks):
    """Run what a request enqueued (the tasks run eagerly) once it commits."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/dedicated-dbs{rest}"


def create(client, project, capture, name="main"):
    with capture():
        resp = client.post(url(project), {"name": name}, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def notes(cluster, credentials, **override) -> list[str]:
    with cluster.connect(credentials, **override) as conn:
        return [r[0] for r in conn.execute("SELECT body FROM notes ORDER BY id")]


def write(cluster, credentials, body: str) -> None:
    with cluster.connect(credentials) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (id serial PRIMARY KEY, body text)")
        conn.execute("INSERT INTO notes (body) VALUES (%s)", [body])


def current(project, db_id) -> dict:
    """The connection the project's builds get now (the managed variables), at the cluster's own address."""
    database = DedicatedDatabase.objects.get(pk=db_id)
    return credentials_of(database)


def test_create_write_backup_restore_branch_and_delete(alice_client, project, cluster, capture):
    body = create(alice_client, project, capture)
    assert body["engine"] == "postgres" and body["status"] == "provisioning" and body["parentId"] is None
    assert body["envVars"] == VARIABLES and body["name"] == "main"
    creds = body["credentials"]
    assert creds["url"] == (f"postgres://{creds['user']}:{creds['password']}@{creds['host']}:{creds['port']}/"
                            f"{creds['database']}")
    db_id = body["id"]
    row = DedicatedDatabase.objects.get(pk=db_id)
    assert creds["password"] not in row.credentials_encrypted  # encrypted at rest
    assert row.role_name == creds["user"] and row.role_name.startswith(cluster.prefix)

    detail = alice_client.get(url(project, f"/{db_id}")).json()
    assert detail["status"] == "ready", detail["errorMessage"]
    assert detail["sizeBytes"] > 0 and detail["envVars"] == VARIABLES and "credentials" not in detail
    listed = alice_client.get(url(project)).json()
    assert [d["id"] for d in listed["items"]] == [db_id] and listed["nextCursor"] is None
    assert "credentials" not in listed["items"][0]
    with cluster.admin() as conn:
        role = conn.execute("SELECT rolsuper, rolcreatedb, rolcreaterole, rolconnlimit FROM pg_roles "
                            "WHERE rolname = %s", [creds["user"]]).fetchone()
        public = conn.execute("SELECT has_database_privilege('public', %s, 'CONNECT')", [creds["database"]]).fetchone()
    assert role == (False, False, False, 20) and public == (False,)

    write(cluster, creds, "before the backup")
    with capture():
        made = alice_client.post(url(project, f"/{db_id}/backups"), format="json")
    assert made.status_code == 201 and made.json()["kind"] == "manual" and made.json()["status"] == "pending"
    backups = alice_client.get(url(project, f"/{db_id}/backups")).json()["items"]
    assert [(b["id"], b["kind"], b["status"]) for b in backups] == [(made.json()["id"], "manual", "done")]
    assert backups[0]["sizeBytes"] > 0 and backups[0]["createdAt"]
    stored = f"backups/{db_id}/{made.json()['id']}.dump"
    assert storages["artifacts"].size(stored) == backups[0]["sizeBytes"]

    write(cluster, creds, "after the backup")
    with capture():
        restored = alice_client.post(url(project, f"/{db_id}/restore"), {"backupId": made.json()["id"]},
                                     format="json")
    assert restored.status_code == 201 and restored.json()["status"] == "restoring" and restored.json()["id"] == db_id
    assert alice_client.get(url(project, f"/{db_id}")).json()["status"] == "ready"
    now = current(project, db_id)
    assert now["database"] != creds["database"] and now["user"] == creds["user"]
    assert notes(cluster, now) == ["before the backup"]  # the restore, not the change
    row.refresh_from_db()
    assert row.retired_database_name == creds["database"] and row.retired_at is not None
    assert notes(cluster, creds) == ["before the backup", "after the backup"]  # the replaced one is kept

    with capture():
        branched = alice_client.post(url(project, f"/{db_id}/branch"), {"name": "feature"}, format="json")
    assert branched.status_code == 201, branched.json()
    branch = branched.json()
    assert branch["parentId"] == db_id and branch["name"] == "feature" and branch["status"] == "provisioning"
    branch_creds = branch["credentials"]
    assert branch_creds["user"] != creds["user"] and branch_creds["database"] != now["database"]
    assert alice_client.get(url(project, f"/{branch['id']}")).json()["status"] == "ready"
    assert notes(cluster, branch_creds) == ["before the backup"]
    write(cluster, branch_creds, "on the branch")
    assert notes(cluster, branch_creds) == ["before the backup", "on the branch"]
    assert notes(cluster, now) == ["before the backup"]  # the parent is unchanged
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        cluster.connect(branch_creds, database=now["database"])  # the branch's role cannot open the parent
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        cluster.connect(now, database=branch_creds["database"])
    names = alice_client.get(url(project)).json()["items"]
    assert {d["name"]: d["envVars"][0] for d in names} == {"main": "DATABASE_URL", "feature": "FEATURE_DATABASE_URL"}

    with capture():
        assert alice_client.delete(url(project, f"/{branch['id']}")).json() == {"deleted": True}
    assert branch_creds["user"] not in cluster.roles() and branch_creds["database"] not in cluster.databases()
    with capture():
        assert alice_client.delete(url(project, f"/{db_id}")).status_code == 200
    assert cluster.databases() == set() and cluster.roles() == set()
    assert not storages["artifacts"].exists(stored)
    assert not DedicatedDatabase.objects.exists() and not DedicatedDatabaseBackup.objects.exists()
    assert alice_client.delete(url(project, f"/{db_id}")).status_code == 404


def test_a_branch_of_a_database_in_use_is_a_dump_and_restore(alice_client, project, cluster, capture):
    source = create(alice_client, project, capture)
    write(cluster, source["credentials"], "copied while in use")
    with cluster.connect(source["credentials"]) as held:  # CREATE DATABASE ... TEMPLATE needs no connection
        held.execute("SELECT 1")
        with capture():
            branch = alice_client.post(url(project, f"/{source['id']}/branch"), {"name": "copy"},
                                       format="json").json()
        assert DedicatedDatabase.objects.get(pk=branch["id"]).status == "ready"
    assert notes(cluster, branch["credentials"]) == ["copied while in use"]
    with cluster.connect(branch["credentials"]) as conn:  # the branch's role owns what the dump made
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'notes'").fetchone()[0]
    assert owner == branch["credentials"]["user"]


def test_scheduled_backups_keep_the_newest_and_replaced_databases_go(alice, as_token, project, cluster, capture,
                                                                     settings, travel):
    alice_client = as_token(alice)  # outlives the clock's travel
    settings.DEDICATED_DB_BACKUP_INTERVAL_HOURS, settings.DEDICATED_DB_BACKUP_KEEP = 1, 2
    settings.DEDICATED_DB_RESTORE_KEEP_HOURS = 2
    db = create(alice_client, project, capture)
    write(cluster, db["credentials"], "first")
    assert dedicated_dbs_sweep()["backups"] == 0  # not an hour old yet
    for _ in range(3):
        travel(3601)
        with capture():
            assert dedicated_dbs_sweep()["backups"] == 1
    assert dedicated_dbs_sweep()["backups"] == 0  # the newest is recent
    scheduled = DedicatedDatabaseBackup.objects.filter(kind="scheduled")
    assert scheduled.count() == 2 and set(scheduled.values_list("status", flat=True)) == {"done"}
    _, files = storages["artifacts"].listdir(f"backups/{db['id']}")
    assert sorted(files) == sorted(f"{b.pk}.dump" for b in scheduled)  # the oldest one's file went with it

    first, second = (b.pk for b in scheduled.order_by("created_at"))
    for backup_id in (first, second):
        with capture():
            resp = alice_client.post(url(project, f"/{db['id']}/restore"), {"backupId": backup_id}, format="json")
        assert resp.status_code == 201, resp.json()
    row = DedicatedDatabase.objects.get(pk=db["id"])
    databases = cluster.databases()
    assert row.database_name in databases and row.retired_database_name in databases
    assert db["credentials"]["database"] not in databases  # the second restore dropped what the first replaced
    travel(2 * 3600 + 1)
    with capture():
        assert dedicated_dbs_sweep()["retired"] == 1
    assert cluster.databases() == {row.database_name}
    assert DedicatedDatabase.objects.get(pk=db["id"]).retired_database_name == ""


def test_a_failed_branch_drops_what_it_made(alice_client, project, cluster, capture):
    source = create(alice_client, project, capture)
    with cluster.admin() as conn:  # the source's database vanished behind the platform's back
        conn.execute(f'DROP DATABASE "{source["credentials"]["database"]}"')
    with capture():
        branch = alice_client.post(url(project, f"/{source['id']}/branch"), {"name": "broken"}, format="json").json()
    detail = alice_client.get(url(project, f"/{branch['id']}")).json()
    assert detail["status"] == "error" and "does not exist" in detail["errorMessage"]
    assert branch["credentials"]["user"] not in cluster.roles()
    assert branch["credentials"]["database"] not in cluster.databases()


def test_a_failed_restore_leaves_the_database_as_it_was(alice_client, project, cluster, capture):
    db = create(alice_client, project, capture)
    write(cluster, db["credentials"], "kept")
    with capture():
        backup = alice_client.post(url(project, f"/{db['id']}/backups"), format="json").json()
    storages["artifacts"].delete(f"backups/{db['id']}/{backup['id']}.dump")
    before = cluster.databases()
    with capture():
        alice_client.post(url(project, f"/{db['id']}/restore"), {"backupId": backup["id"]}, format="json")
    detail = alice_client.get(url(project, f"/{db['id']}")).json()
    assert detail["status"] == "ready" and detail["errorMessage"].startswith(f"The restore from {backup['id']} failed")
    assert cluster.databases() == before and notes(cluster, current(project, db["id"])) == ["kept"]


def test_the_sweep_drops_databases_of_a_deleted_project(alice_client, project, cluster, capture):
    create(alice_client, project, capture)
    assert cluster.databases() and cluster.roles()
    project.delete()  # rows go with the project; the cluster learns of it from the sweep
    with capture():
        assert dedicated_dbs_sweep()["orphans"] == 2
    assert cluster.databases() == set() and cluster.roles() == set()


def test_an_unreachable_cluster_ends_in_error(alice_client, project, cluster, capture, settings):
    settings.DEDICATED_DB_POSTGRES_URL = "postgres://postgres@127.0.0.1:9/postgres"
    body = create(alice_client, project, capture)
    detail = alice_client.get(url(project, f"/{body['id']}")).json()
    assert detail["status"] == "error" and "cannot be reached" in detail["errorMessage"]


def test_a_build_gets_the_managed_database_url(alice_client, workspace, cluster, capture, settings, tmp_path):
    """The build sees DATABASE_URL at its sandbox's own loopback; in bubblewrap, psql logs in through the
    endpoint as the database's role (the cluster's real port stays closed)."""
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    show = "import os; print(os.environ['DATABASE_URL'].split('@')[1])"
    login = "psql \"$DATABASE_URL\" -Atc \"select current_user || ' in ' || current_database()\""
    project = ProjectFactory(workspace=workspace, name="App", slug="app",
                             git_url=hosted_repo(workspace, "app", {"index.html": "<h1>app</h1>"}),
                             build_command=f'python3 -c "{show}" && ({login} || true) && mkdir -p out && '
                                           'cp index.html out/',
                             output_directory="out")
    db = create(alice_client, project, capture)
    row = DedicatedDatabase.objects.get(pk=db["id"])
    assert managed_env(project=project)["PGDATABASE"] == row.database_name
    resp = trigger(alice_client, project, lambda execute: capture())
    assert resp.status_code == 201
    deployment = Deployment.objects.get(pk=resp.json()["id"])
    assert deployment.status == "ready", deployment.error_message
    lines = list(LogLine.objects.filter(deployment=deployment).values_list("text", flat=True))
    assert f"127.0.0.1:{local_port(db['id'])}/{row.database_name}" in lines, lines
    if deployment.snapshot["sandbox"]["runner"] == "bubblewrap" and shutil.which("psql"):
        assert f"{row.role_name} in {row.database_name}" in lines, lines


def test_the_sweep_sends_a_lost_provisioning_job_again(alice, as_token, project, cluster, capture, travel):
    client = as_token(alice)
    body = client.post(url(project), {"name": "main"}, format="json").json()  # its job never ran (no commit)
    assert DedicatedDatabase.objects.get(pk=body["id"]).status == "provisioning"
    with capture():
        assert dedicated_dbs_sweep()["requeued"] == 0  # it may still be on its way
    travel(61)
    with capture():
        assert dedicated_dbs_sweep()["requeued"] == 1
    assert DedicatedDatabase.objects.get(pk=body["id"]).status == "ready"
    with cluster.connect(body["credentials"]) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == body["credentials"]["user"]
