"""Graduation in the dashboard: Settings links to the export page, which shows the redeem code once; the workspace's
redeem page makes the project and shows what was skipped and the new secrets; roles as in the API."""
import pytest
from django.test import Client

from platform_app.models import CronJob, Graduation, Project
from tests.factories import MembershipFactory, WorkspaceFactory
from tests.platform_app.automation.factories import CronJobFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def project(workspace):
    project = ProjectFactory(workspace=workspace, name="Shop", slug="shop",
                             git_url="https://git.example.com/acme/shop.git")
    CronJobFactory(project=project, path="/api/nightly")
    return project


def test_export_then_redeem_in_the_dashboard(alice, project):
    beta = WorkspaceFactory(slug="beta", name="Beta")
    MembershipFactory(workspace=beta, user=alice, role="owner")
    client = browser(alice)
    settings_page = client.get("/dashboard/acme/projects/shop/settings/").content.decode()
    assert "/dashboard/acme/projects/shop/graduate/" in settings_page
    page = client.get("/dashboard/acme/projects/shop/graduate/").content.decode()
    assert "Not exported yet." in page and "Export and get a redeem code" in page
    resp = client.post("/dashboard/acme/projects/shop/graduate/")
    assert resp.status_code == 200
    html = resp.content.decode()
    code = html.split('id="redeem-code">')[1].split("<")[0]
    assert code.startswith("svcg_") and "will not be shown again" in html and "svcgrad1." in html
    again = client.get("/dashboard/acme/projects/shop/graduate/").content.decode()
    assert code not in again and "waiting" in again

    assert "/dashboard/beta/redeem/" in client.get("/dashboard/beta/").content.decode()
    resp = client.post("/dashboard/beta/redeem/", {"redeem_code": code, "bundle": ""})
    assert resp.status_code == 200, resp.content.decode()[:2000]
    new = Project.objects.get(workspace=beta)
    html = resp.content.decode()
    assert "Shop is in Beta" in html and f"/dashboard/beta/projects/{new.slug}/" in html
    assert "cron job" in html and CronJob.objects.filter(project=new).exists()
    used = client.post("/dashboard/beta/redeem/", {"redeem_code": code})
    assert used.status_code == 400 and "already used" in used.content.decode()
    assert Graduation.objects.get().redeemed_at is not None


def test_developers_cannot_export_or_redeem(alice, bob, charlie, project):
    client = browser(bob)
    page = client.get("/dashboard/acme/projects/shop/graduate/").content.decode()
    assert "Export and get a redeem code" not in page
    assert client.post("/dashboard/acme/projects/shop/graduate/").status_code == 403
    assert client.post("/dashboard/acme/redeem/", {"redeem_code": "svcg_x"}).status_code == 403
    assert browser(charlie).get("/dashboard/acme/projects/shop/graduate/").status_code == 404
    assert not Graduation.objects.exists()
