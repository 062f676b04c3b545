"""Every role against every change of this area, and tokens without `admin`.

Owners and admins may change; developers, viewers and billing members get 403 `forbidden`
and nothing changes. A token lacking `admin` gets 403 `insufficient_scope`.
"""
import pytest

from platform_app.models import AuditEvent, Invitation, Membership, Project, ProjectGroup, Workspace
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.projects.factories import ProjectFactory, ProjectGroupFactory

pytestmark = pytest.mark.django_db

ROLES = ["owner", "admin", "developer", "viewer", "billing"]


def _state():
    return (
        list(Workspace.objects.values_list("name", "slug").order_by("pk")),
        list(Membership.objects.values_list("pk", "role").order_by("pk")),
        Invitation.objects.count(),
        list(Project.objects.values_list("pk", "name").order_by("pk")),
        ProjectGroup.objects.count(),
    )


@pytest.fixture
def world(workspace, alice, bob):
    target = MembershipFactory(workspace=workspace, user=UserFactory(email="target@example.com"), role="viewer")
    return {"project": ProjectFactory(workspace=workspace, slug="web"),
            "group": ProjectGroupFactory(workspace=workspace, slug="apps"), "target": target}


CHANGES = {
    "update member role": lambda c, w: c.patch(f"/v1/orgs/acme/members/{w['target'].pk}", {"role": "developer"},
                                               format="json"),
    "remove member": lambda c, w: c.delete(f"/v1/orgs/acme/members/{w['target'].pk}"),
    "invite": lambda c, w: c.post("/v1/orgs/acme/invitations", {"email": "new@example.com", "role": "viewer"},
                                  format="json"),
    "create project from image": lambda c, w: c.post("/v1/orgs/acme/projects/from-image",
                                                     {"name": "Img", "imageRef": "nginx:1.27"}, format="json"),
    "create project from git": lambda c, w: c.post("/v1/orgs/acme/projects",
                                                   {"name": "Git", "gitUrl": w["repo"]}, format="json"),
    "create project from template": lambda c, w: c.post("/v1/orgs/acme/projects/from-template",
                                                        {"name": "Tpl", "template": "static-site"}, format="json"),
    "update project": lambda c, w: c.patch(f"/v1/orgs/acme/projects/{w['project'].pk}", {"name": "Renamed"},
                                           format="json"),
    "delete project": lambda c, w: c.delete(f"/v1/orgs/acme/projects/{w['project'].pk}"),
    "create group": lambda c, w: c.post("/v1/orgs/acme/project-groups", {"name": "New group"}, format="json"),
    "delete group": lambda c, w: c.delete(f"/v1/orgs/acme/project-groups/{w['group'].pk}"),
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_role_against_change(role, change, world, workspace, as_user, make_repo):
    world["repo"] = make_repo({"index.html": "x"}) if change == "create project from git" else ""
    actor = UserFactory()
    MembershipFactory(workspace=workspace, user=actor, role=role)
    before = _state()
    res = CHANGES[change](as_user(actor), world)
    if role in ("owner", "admin"):
        assert res.status_code in (200, 201), res.json()
        assert _state() != before
    else:
        assert res.status_code == 403
        assert res.json()["code"] == "forbidden"
        assert _state() == before


@pytest.mark.parametrize("scopes", [["read"], ["deploy"], ["env:write"], ["domains"]])
@pytest.mark.parametrize("change", ["update member role", "invite", "create project from image", "update project",
                                    "delete project", "create group"])
def test_token_without_admin_scope(scopes, change, world, alice, as_token):
    before, events = _state(), AuditEvent.objects.count()
    res = CHANGES[change](as_token(alice, scopes=scopes), world)
    assert res.status_code == 403
    assert res.json()["code"] == "insufficient_scope"
    assert res.json()["details"]["requiredScope"] == "admin"
    assert _state() == before and AuditEvent.objects.count() == events


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads(role, world, workspace, as_user):
    actor = UserFactory()
    MembershipFactory(workspace=workspace, user=actor, role=role)
    client = as_user(actor)
    for url in ("/v1/orgs/acme/projects", "/v1/orgs/acme/projects/web", "/v1/orgs/acme/project-groups",
                "/v1/orgs/acme/members", "/v1/orgs/acme/stats", "/v1/orgs/acme/activity",
                "/v1/orgs/acme/projects/web/auto-deploy-status", "/v1/orgs/acme/project-groups/apps"):
        assert client.get(url).status_code == 200, url


def test_outsider_gets_404_everywhere(world, charlie, as_user):
    client = as_user(charlie)
    assert client.get("/v1/orgs/acme/projects").status_code == 404
    assert client.post("/v1/orgs/acme/project-groups", {"name": "x"}, format="json").status_code == 404
    assert client.delete(f"/v1/orgs/acme/projects/{world['project'].pk}").status_code == 404
