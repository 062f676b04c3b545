"""The edge's cache with ISR revalidation, and preview protection through the edge with its cookie."""
import pytest

from platform_app.models import Deployment
from tests.conftest import hosted_repo
from tests.platform_app.deployments.test_builds import trigger
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace, tmp_path, settings):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    repo = hosted_repo(workspace, "blog", {"index.html": "<h1>v1</h1>", "blog/post.html": "<p>post v1</p>",
                                           "_tags.json": '{"/blog/": ["blog"]}'})
    return ProjectFactory(workspace=workspace, name="Blog", slug="blog", git_url=repo)


def deploy(client, project, capture, env="production"):
    trigger(client, project, capture, env=env)
    return Deployment.objects.filter(env=env).latest("created_at")


def test_cached_pages_stay_until_revalidated(alice_client, client, project, settings, django_capture_on_commit_callbacks):
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    first = client.get("/", HTTP_HOST="blog.localhost")
    assert first["X-Edge-Cache"] == "MISS" and first.content == b"<h1>v1</h1>"
    assert client.get("/", HTTP_HOST="blog.localhost")["X-Edge-Cache"] == "HIT"
    client.get("/blog/post.html", HTTP_HOST="blog.localhost")
    artifact = settings.ARTIFACT_ROOT / deployment.artifact_path
    (artifact / "index.html").write_text("<h1>v2</h1>")  # regenerated content
    (artifact / "blog" / "post.html").write_text("<p>post v2</p>")
    assert client.get("/", HTTP_HOST="blog.localhost").content == b"<h1>v1</h1>"
    url = f"/v1/orgs/acme/projects/{project.pk}/isr/revalidate"
    assert alice_client.post(url, {}, format="json").status_code == 400
    resp = alice_client.post(url, {"paths": ["/"]}, format="json")
    assert resp.status_code == 201 and resp.json()["purged"] == ["/index.html"]  # named by the served file
    assert client.get("/", HTTP_HOST="blog.localhost").content == b"<h1>v2</h1>"
    assert client.get("/blog/post.html", HTTP_HOST="blog.localhost").content == b"<p>post v1</p>"
    assert alice_client.post(url, {"tags": ["blog"]}, format="json").json()["purged"] == ["/blog/post.html"]
    assert client.get("/blog/post.html", HTTP_HOST="blog.localhost").content == b"<p>post v2</p>"


def test_preview_protection_through_the_edge(alice_client, client, project, django_capture_on_commit_callbacks):
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks, env="preview")
    host = f"blog-{deployment.pk[4:12]}.localhost"
    assert client.get("/", HTTP_HOST=host).status_code == 200
    alice_client.put(f"/v1/orgs/acme/projects/{project.pk}/preview-protection",
                     {"mode": "password", "password": "let-me-in-9"}, format="json")
    blocked = client.get("/", HTTP_HOST=host)
    assert blocked.status_code == 401 and b"type=password" in blocked.content
    verified = client.post(f"/v1/preview-protection/{project.pk}/verify", "password=let-me-in-9",
                           content_type="application/x-www-form-urlencoded")
    assert verified.status_code == 201  # a form post, as the edge's page sends it; the cookie is now set
    allowed = client.get("/", HTTP_HOST=host)
    assert allowed.status_code == 200 and allowed.content == b"<h1>v1</h1>"
    assert client.get("/", HTTP_HOST="blog.localhost").status_code == 404  # no production deployment yet
