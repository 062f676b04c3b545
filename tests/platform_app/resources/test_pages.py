"""The Add-ons and Components pages: what they list, and the forms and buttons each role gets."""
import pytest

from platform_app.models import Addon, Component, Volume
from tests.factories import MembershipFactory
from tests.platform_app.resources.factories import AddonFactory, ComponentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def page_client(client, alice):
    client.force_login(alice)
    return client


def test_addons_page_lists_and_adds(page_client, make_project, pg_server, django_capture_on_commit_callbacks):
    project = make_project("shop", {"index.html": "x"})
    url = f"/dashboard/acme/projects/{project.slug}/addons/"
    assert b"No add-ons yet." in page_client.get(url).content
    with django_capture_on_commit_callbacks(execute=True):
        resp = page_client.post(url, {"kind": "postgres", "name": ""})
    assert resp.status_code == 302
    page = page_client.get(url).content.decode()
    assert "postgres" in page and "<code>DATABASE_URL</code>" in page and "badge-ready" in page
    bad = page_client.post(url, {"kind": "postgres", "name": "Not A Name"})
    assert bad.status_code == 400 and "must be 1 to 40" in bad.content.decode() and Addon.objects.count() == 1
    addon = Addon.objects.get()
    assert page_client.post(f"/dashboard/acme/projects/{project.slug}/addons/{addon.pk}/delete").status_code == 302
    assert Addon.objects.get().deleted_at is not None


def test_a_viewer_reads_but_cannot_add(client, workspace, make_project):
    viewer = MembershipFactory(workspace=workspace, role="viewer").user
    client.force_login(viewer)
    project = make_project("ro", {"index.html": "x"})
    AddonFactory(project=project, status="ready")
    page = client.get(f"/dashboard/acme/projects/{project.slug}/addons/").content.decode()
    assert "Add an add-on" not in page and "Delete" not in page
    assert client.post(f"/dashboard/acme/projects/{project.slug}/addons/", {"kind": "postgres"}).status_code == 403


def test_components_page_adds_scales_and_mounts(page_client, make_project):
    project = make_project("svc", {"index.html": "x"})
    url = f"/dashboard/acme/projects/{project.slug}/components/"
    resp = page_client.post(url, {"name": "api", "kind": "web", "start_command": "python3 app.py",
                                  "instance_size": "starter", "instances": 1, "health_check_path": "/health"})
    assert resp.status_code == 302
    component = Component.objects.get()
    page = page_client.get(url).content.decode()
    assert "api" in page and "1 × starter" in page and "http://api--svc.localhost:8000/" in page
    page_client.post(f"{url}{component.pk}/scale", {f"{component.pk}-instance_size": "standard",
                                                   f"{component.pk}-instances": 2})
    component.refresh_from_db()
    assert (component.instance_size, component.instances) == ("standard", 2)
    refused = page_client.post(f"{url}{component.pk}/add-volume", {f"vol-{component.pk}-name": "data",
                                                                  f"vol-{component.pk}-mount_path": "/data",
                                                                  f"vol-{component.pk}-size_gb": 1}, follow=True)
    assert "one instance" in refused.content.decode() and not Volume.objects.exists()
    missing = page_client.post(url, {"name": "worker", "kind": "worker", "instance_size": "starter", "instances": 1})
    assert missing.status_code == 400 and "needs a start command" in missing.content.decode()


def test_a_developer_deploys_a_component_but_cannot_change_it(client, bob, make_project,
                                                              django_capture_on_commit_callbacks):
    client.force_login(bob)
    component = ComponentFactory(project=make_project("dev", {"index.html": "x"}))
    base = f"/dashboard/acme/projects/{component.project.slug}/components/{component.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"{base}/deploy")
    assert resp.status_code == 302 and "/deployments/dpl_" in resp["Location"]
    assert client.post(f"{base}/delete").status_code == 403 and Component.objects.exists()
