"""A ready production deployment of project `site` in alice's workspace, served by the edge at site.localhost."""
import pytest

from platform_app.models import Deployment
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

PAGES = {
    "index.html": "<!doctype html><html><head><title>Site</title></head><body><h1>Home</h1></body></html>",
    "about.html": "<html><body><p>About</p></body></html>",
    "admin/index.html": "<h1>Admin</h1>",
    "app.js": "console.log(1)",
}


@pytest.fixture
def site(workspace, settings, tmp_path):
    """The project; its production deployment's files are PAGES."""
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    artifact = settings.ARTIFACT_ROOT / "site-1"
    for name, text in PAGES.items():
        (artifact / name).parent.mkdir(parents=True, exist_ok=True)
        (artifact / name).write_text(text)
    project = ProjectFactory(workspace=workspace, name="Site", slug="site")
    deployment = DeploymentFactory(project=project, env="production", status=Deployment.Status.READY,
                                   artifact_path="site-1")
    project.production_deployment = deployment
    project.save(update_fields=["production_deployment"])
    return project


@pytest.fixture
def edge(client):
    """`edge(path, ip=..., **extra)` → the edge's answer for site.localhost from that address."""

    def get(path="/", ip="203.0.113.7", method="get", **extra):
        return getattr(client, method)(path, HTTP_HOST="site.localhost", REMOTE_ADDR=ip, **extra)

    return get
