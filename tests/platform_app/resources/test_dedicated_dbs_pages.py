"""The project's Databases page: the list with status, size, variables and backups; create (the psql URL shown
once), back up now, restore, branch and delete through the same services as the API; a developer reads and is
refused every change; other workspaces get 404."""
import pytest
from django.test import Client

from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup
from platform_app.services.resources.dedicated_dbs import credentials_of
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.dedicated_dbs_fixtures import (DedicatedDatabaseBackupFactory,
                                                                 DedicatedDatabaseFactory, cluster)  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop")


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(project):
    return f"/dashboard/acme/projects/{project.slug}/databases/"


def action(project, database, name):
    return f"/dashboard/acme/projects/{project.pk}/databases/{database.pk}/{name}"


def test_owner_creates_backs_up_restores_branches_and_deletes(alice, project, cluster,
                                                              django_capture_on_commit_callbacks):
    client = browser(alice)
    html = client.get(page(project)).content.decode()
    assert "No databases yet." in html and "Create a database" in html and 'aria-current="page">Databases' in html
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(page(project), {"name": "main"})
    assert made.status_code == 200
    database = DedicatedDatabase.objects.get()
    assert database.status == "ready", database.error_message
    text = made.content.decode()
    password = credentials_of(database)["password"]
    assert f"{database.role_name}:{password}@" in text and "<code>DATABASE_URL</code>" in text
    html = client.get(page(project)).content.decode()
    assert password not in html and "ready" in html and "Variables:" in html and "No backups yet." in html

    with django_capture_on_commit_callbacks(execute=True):
        backed = client.post(action(project, database, "backup"), follow=True)
    assert "Backup started." in backed.content.decode()
    backup = DedicatedDatabaseBackup.objects.get()
    assert backup.status == "done" and "Latest backups of main" in backed.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        restored = client.post(action(project, database, "restore"), {"backup": backup.pk}, follow=True)
    assert "Restore started" in restored.content.decode()
    database.refresh_from_db()
    assert database.status == "ready" and database.retired_database_name

    with django_capture_on_commit_callbacks(execute=True):
        branched = client.post(action(project, database, "branch"), {"name": "feature"})
    assert branched.status_code == 200 and "Database feature created" in branched.content.decode()
    branch = DedicatedDatabase.objects.get(name="feature")
    assert branch.parent_id == database.pk and branch.status == "ready"
    assert "branch of main" in client.get(page(project)).content.decode()
    bad = client.post(action(project, database, "branch"), {"name": "Not A Name"})
    assert bad.status_code == 400 and "name must be" in bad.content.decode()

    for item in (branch, database):
        with django_capture_on_commit_callbacks(execute=True):
            assert client.post(action(project, item, "delete")).status_code == 302
    assert not DedicatedDatabase.objects.exists() and cluster.databases() == set() and cluster.roles() == set()


def test_create_form_errors_are_400(alice, project, settings):
    settings.DEDICATED_DB_PROVISIONER, settings.DEDICATED_DB_POSTGRES_URL = "postgres", ""
    client = browser(alice)
    resp = client.post(page(project), {"name": "main"})
    assert resp.status_code == 400 and "DEDICATED_DB_POSTGRES_URL" in resp.content.decode()
    settings.DEDICATED_DB_POSTGRES_URL = "postgres://admin@10.0.0.5:5432/postgres"
    resp = client.post(page(project), {"name": "Main!"})
    assert resp.status_code == 400 and "name must be" in resp.content.decode()
    assert not DedicatedDatabase.objects.exists()


def test_developers_see_but_cannot_change(bob, project):
    database = DedicatedDatabaseFactory(project=project, name="main", size_bytes=3 * 1024 * 1024)
    backup = DedicatedDatabaseBackupFactory(database=database)
    client = browser(bob)
    html = client.get(page(project)).content.decode()
    assert "main" in html and "3.0\xa0MB" in html and "Create a database" not in html and "Delete main" not in html
    assert client.post(page(project), {"name": "mine"}).status_code == 403
    for name, data in (("backup", {}), ("restore", {"backup": backup.pk}), ("branch", {"name": "b"}),
                       ("delete", {})):
        assert client.post(action(project, database, name), data).status_code == 403, name
    assert DedicatedDatabase.objects.count() == 1 and DedicatedDatabaseBackup.objects.count() == 1


def test_other_workspaces_and_unknown_actions_get_404(alice, charlie, project):
    database = DedicatedDatabaseFactory(project=project, name="main")
    assert browser(charlie).get(page(project)).status_code == 404
    assert browser(charlie).post(action(project, database, "delete")).status_code == 404
    assert browser(alice).post(action(project, database, "explode")).status_code == 404
    assert DedicatedDatabase.objects.count() == 1


def test_the_list_refreshes_itself_while_work_runs(alice, project):
    client = browser(alice)
    DedicatedDatabaseFactory(project=project, name="main", status="provisioning", credentials_encrypted="")
    html = client.get(page(project)).content.decode()
    assert 'hx-trigger="every 2s"' in html
    fragment = client.get(page(project), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith("<section") and "Create a database" not in fragment
    DedicatedDatabase.objects.update(status="ready")
    assert 'hx-trigger' not in client.get(page(project)).content.decode()
