"""Workspace update (PATCH O), stats, activity feed, project groups."""
import pytest
from django.utils import timezone

from platform_app.models import AuditEvent, Project, ProjectGroup, Workspace
from tests.factories import WorkspaceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory, ProjectGroupFactory

pytestmark = pytest.mark.django_db


def test_patch_workspace(alice, bob, workspace, as_user):
    res = as_user(alice).patch("/v1/orgs/acme", {"name": "Acme Inc", "slug": "acme-inc"}, format="json")
    assert res.status_code == 200, res.json()
    assert res.json()["slug"] == "acme-inc" and res.json()["role"] == "owner"
    workspace.refresh_from_db()
    assert (workspace.name, workspace.slug) == ("Acme Inc", "acme-inc")
    assert AuditEvent.objects.get(action="workspace.updated").data["slug"] == ["acme", "acme-inc"]
    # GET is still served by the same view
    assert as_user(alice).get("/v1/orgs/acme-inc").json()["name"] == "Acme Inc"
    assert as_user(bob).patch("/v1/orgs/acme-inc", {"name": "Bob's"}, format="json").status_code == 403


def test_patch_workspace_slug_taken_and_bad_input(alice, workspace, as_user):
    WorkspaceFactory(slug="taken")
    client = as_user(alice)
    assert client.patch("/v1/orgs/acme", {"slug": "taken"}, format="json").status_code == 409
    assert client.patch("/v1/orgs/acme", {"slug": "no spaces"}, format="json").status_code == 400
    assert client.patch("/v1/orgs/acme", {"plan": "free"}, format="json").status_code == 400
    assert Workspace.objects.get(pk=workspace.pk).slug == "acme"


def test_stats(alice, bob, workspace, as_user):
    project = ProjectFactory(workspace=workspace)
    ProjectFactory()
    DeploymentFactory(project=project, branch="main", status="ready")
    DeploymentFactory(project=project, branch="dev", status="error")
    DeploymentFactory(project=project, branch="old", created_at=timezone.now().replace(year=2020))
    body = as_user(bob).get("/v1/orgs/acme/stats").json()
    assert body["projects"] == 1 and body["members"] == 2
    assert body["deploymentsThisMonth"] == 2
    assert body["deploymentsByStatus"] == {"ready": 1, "error": 1}


def test_activity_feed_paginates_and_validates_limit(alice, workspace, as_user):
    client = as_user(alice)
    for n in range(3):
        client.post("/v1/orgs/acme/project-groups", {"name": f"G{n}"}, format="json")
    page = client.get("/v1/orgs/acme/activity?limit=2").json()
    assert [e["action"] for e in page["items"]] == ["project_group.created"] * 2
    assert page["items"][0]["actor"]["email"] == "alice@example.com"
    rest = client.get(f"/v1/orgs/acme/activity?limit=2&cursor={page['nextCursor']}").json()
    assert len(rest["items"]) == 1 and rest["nextCursor"] is None
    assert client.get("/v1/orgs/acme/activity?limit=abc").status_code == 400
    assert client.get("/v1/orgs/acme/activity?limit=0").status_code == 400
    assert client.get("/v1/orgs/acme/activity?limit=1000").status_code == 200


def test_project_groups(alice, workspace, as_user):
    client = as_user(alice)
    res = client.post("/v1/orgs/acme/project-groups", {"name": "Storefront"}, format="json")
    assert res.status_code == 201 and res.json()["slug"] == "storefront"
    group = ProjectGroup.objects.get()
    assert client.post("/v1/orgs/acme/project-groups", {"name": "Storefront"}, format="json").status_code == 409
    project = ProjectFactory(workspace=workspace, group=group)
    body = client.get("/v1/orgs/acme/project-groups/storefront").json()
    assert body["projectCount"] == 1 and body["projects"][0]["id"] == project.pk
    assert [g["slug"] for g in client.get("/v1/orgs/acme/project-groups").json()["items"]] == ["storefront"]
    assert client.get("/v1/orgs/acme/project-groups/nope").status_code == 404
    res = client.delete(f"/v1/orgs/acme/project-groups/{group.pk}")
    assert res.status_code == 200
    assert not ProjectGroup.objects.exists()
    assert Project.objects.get(pk=project.pk).group is None  # projects stay, ungrouped


@pytest.mark.parametrize("body", [{"name": "\u0108\u00af"}, {"name": "---"}, {"name": "\u0416\u0443\u043a"}])
def test_a_group_name_without_an_ascii_letter_or_digit_needs_a_slug(alice, workspace, as_user, body):
    """As the schema says: what slugify would make of `Ĉ¯` (`c`) is not something the schema can promise."""
    client = as_user(alice)
    refused = client.post("/v1/orgs/acme/project-groups", body, format="json")
    assert refused.status_code == 400 and "name" in refused.json()["details"], refused.json()
    assert not ProjectGroup.objects.exists()
    made = client.post("/v1/orgs/acme/project-groups", {**body, "slug": "named"}, format="json")
    assert made.status_code == 201 and made.json()["slug"] == "named"
    assert client.post("/v1/orgs/acme/project-groups", {"name": "Ĉafé"}, format="json").json()["slug"] == "cafe"


def test_group_of_other_workspace_is_404(alice, workspace, as_user):
    foreign = ProjectGroupFactory()
    assert as_user(alice).delete(f"/v1/orgs/acme/project-groups/{foreign.pk}").status_code == 404
    assert ProjectGroup.objects.filter(pk=foreign.pk).exists()
