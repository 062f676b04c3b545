"""Workspaces: create (creator is owner), list, get by id or slug."""
import pytest

from platform_app.models import AuditEvent, Membership, Workspace

pytestmark = pytest.mark.django_db


def test_create_makes_the_creator_owner(alice, alice_client):
    resp = alice_client.post("/v1/orgs", {"name": "Blue Team"}, format="json")
    assert resp.status_code == 201
    body = resp.json()
    assert body["slug"] == "blue-team"
    assert body["role"] == "owner"
    assert Membership.objects.get(workspace_id=body["id"]).user == alice
    assert AuditEvent.objects.filter(workspace_id=body["id"], action="workspace.created").exists()


def test_slug_conflict_is_409(alice_client):
    resp = alice_client.post("/v1/orgs", {"name": "Other", "slug": "acme"}, format="json")
    assert resp.status_code == 409
    assert Workspace.objects.count() == 1


def test_list_and_get_by_id_or_slug(alice_client, workspace):
    items = alice_client.get("/v1/orgs").json()["items"]
    assert items == [{"id": workspace.pk, "slug": "acme", "name": "Acme", "role": "owner"}]
    assert alice_client.get(f"/v1/orgs/{workspace.pk}").json()["slug"] == "acme"
    assert alice_client.get("/v1/orgs/acme").json()["id"] == workspace.pk


def test_outsider_gets_404(as_user, charlie, workspace):
    assert as_user(charlie).get("/v1/orgs/acme").status_code == 404
