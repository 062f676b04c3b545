"""Rollback moves production between ready deployments of the production environment only: a preview (or any
other environment's) deployment never becomes production, by default or by name."""
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.models import Project
from tests.platform_app.domains.factories import ready_deployment
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(workspace, settings, tmp_path):
    """Production P1, then production P2 (serving), then a newer password-protected preview V."""
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    project = ProjectFactory(workspace=workspace, name="Site", slug="site")
    now = timezone.now()
    p1 = ready_deployment(project, {"index.html": "<h1>p1</h1>"})
    p2 = ready_deployment(project, {"index.html": "<h1>p2</h1>"})
    v = ready_deployment(project, {"index.html": "<h1>draft</h1>"}, branch="draft", production=False)
    for minutes, deployment in ((3, p1), (2, p2), (1, v)):
        deployment.ready_at = now - timedelta(minutes=minutes)
        deployment.save(update_fields=["ready_at"])
    return project, p1, p2, v


def rollback_url(project):
    return f"/v1/orgs/acme/projects/{project.pk}/rollback"


def test_rollback_by_default_takes_the_earlier_production_deployment_not_a_newer_preview(history, alice_client,
                                                                                          client):
    project, p1, p2, v = history
    resp = alice_client.post(rollback_url(project), {}, format="json")
    assert resp.status_code == 201 and resp.json()["id"] == p1.pk
    assert Project.objects.get(pk=project.pk).production_deployment_id == p1.pk
    served = client.get("/", HTTP_HOST="site.localhost")
    assert served.status_code == 200 and served.content == b"<h1>p1</h1>"


def test_naming_a_preview_deployment_is_400_naming_its_environment(history, alice_client, client):
    project, p1, p2, v = history
    resp = alice_client.post(rollback_url(project), {"deploymentId": v.pk}, format="json")
    body = resp.json()
    assert resp.status_code == 400 and body["code"] == "validation_error" and body["status"] == 400
    assert "preview" in body["message"] and "preview" in body["details"]["deploymentId"][0]
    assert Project.objects.get(pk=project.pk).production_deployment_id == p2.pk
    assert client.get("/", HTTP_HOST="site.localhost").content == b"<h1>p2</h1>"


def test_with_only_previews_besides_production_there_is_nothing_to_roll_back_to(workspace, settings, tmp_path,
                                                                                alice_client):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    project = ProjectFactory(workspace=workspace, name="Site", slug="site")
    ready_deployment(project, {"index.html": "<h1>p1</h1>"})
    ready_deployment(project, {"index.html": "<h1>draft</h1>"}, branch="draft", production=False)
    resp = alice_client.post(rollback_url(project), {}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "nothing_to_roll_back"


def test_the_dashboard_offers_and_refuses_the_same(history, alice, client):
    project, p1, p2, v = history
    client.force_login(alice)
    page = client.get(f"/dashboard/acme/projects/{project.slug}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert p1.pk in html and html.count(f"value=\"{v.pk}\"") + html.count(f"value='{v.pk}'") == 0
    refused = client.post(f"/dashboard/acme/projects/{project.slug}/rollback", {"deployment": v.pk})
    assert Project.objects.get(pk=project.pk).production_deployment_id == p2.pk
    assert refused.status_code in (302, 400)
