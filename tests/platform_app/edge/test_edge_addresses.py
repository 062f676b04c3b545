"""Deployment addresses (`<slug>-<short id>`) belong to their deployment: no project slug may take one, the edge
resolves deployment hosts before project slugs, and only the full 8-character short id resolves (no prefix, so
deployment ids cannot be walked)."""
import pytest

from platform_app.models import Deployment, Project
from tests.platform_app.domains.factories import ready_deployment
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def hello(workspace, settings, tmp_path):
    """alice's project `hello` with a ready preview deployment; (project, deployment, its address label)."""
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    project = ProjectFactory(workspace=workspace, name="Hello", slug="hello")
    deployment = ready_deployment(project, {"index.html": "<h1>alice's preview</h1>"}, branch="feature",
                                  production=False)
    return project, deployment, f"hello-{deployment.pk[4:12]}"


def test_a_slug_that_is_a_deployments_address_is_409(hello, charlie, as_user):
    _, _, label = hello
    client = as_user(charlie)
    resp = client.post("/v1/orgs/charlies/projects/from-image", {"name": "Takeover", "imageRef": "nginx:1",
                                                                 "slug": label}, format="json")
    assert resp.status_code == 409, resp.json()
    assert resp.json()["code"] == "slug_reserved" and "slug" in resp.json()["details"]
    assert not Project.objects.filter(slug=label).exists()
    # the same shape that is no deployment's address is an ordinary slug
    free = client.post("/v1/orgs/charlies/projects/from-image", {"name": "Home", "imageRef": "nginx:1",
                                                                 "slug": "hello-homepage"}, format="json")
    assert free.status_code == 201 and free.json()["slug"] == "hello-homepage"


def test_a_slug_derived_from_the_name_steps_around_a_deployments_address(hello, charlie, as_user):
    _, _, label = hello
    resp = as_user(charlie).post("/v1/orgs/charlies/projects/from-image",
                                 {"name": label.replace("-", " "), "imageRef": "nginx:1"}, format="json")
    assert resp.status_code == 201 and resp.json()["slug"] != label
    assert resp.json()["slug"].startswith(f"{label}-")


def test_the_deployment_is_served_at_its_address_even_if_a_project_has_that_slug(hello, charlie, client):
    """A project made before the slug rule (or through a race) cannot shadow the deployment."""
    _, deployment, label = hello
    other = ProjectFactory(workspace=charlie.memberships.get().workspace, slug=label)
    ready_deployment(other, {"index.html": "<h1>charlie's site</h1>"})
    resp = client.get("/", HTTP_HOST=f"{label}.localhost")
    assert resp.status_code == 200 and resp.content == b"<h1>alice's preview</h1>"
    assert resp["X-Deployment-Id"] == deployment.pk


def test_only_the_full_short_id_resolves(hello, client):
    project, deployment, label = hello
    assert client.get("/", HTTP_HOST=f"{label}.localhost").status_code == 200
    short = deployment.pk[4:12]
    for length in range(1, 8):
        resp = client.get("/", HTTP_HOST=f"hello-{short[:length]}.localhost")
        assert resp.status_code == 404 and b"preview" not in resp.content, length
    for longer in (deployment.pk[4:13], deployment.pk[4:]):
        assert client.get("/", HTTP_HOST=f"hello-{longer}.localhost").status_code == 404
    # nor does Caddy get a certificate for a prefix
    assert client.get("/internal/caddy/ask", {"domain": f"{label}.localhost"}).status_code == 200
    assert client.get("/internal/caddy/ask", {"domain": f"hello-{short[:1]}.localhost"}).status_code == 404


def test_a_project_of_that_shape_without_a_deployment_there_is_served(workspace, settings, tmp_path, client):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    project = ProjectFactory(workspace=workspace, slug="my-homepage")
    ready_deployment(project, {"index.html": "<h1>home</h1>"})
    ProjectFactory(workspace=workspace, slug="my")  # `my-homepage` could be an address of `my`: it is not one
    assert client.get("/", HTTP_HOST="my-homepage.localhost").content == b"<h1>home</h1>"
    assert Deployment.objects.count() == 1
