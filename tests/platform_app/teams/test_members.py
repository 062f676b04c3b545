"""Members: listing, role changes, removal (tokens revoked, audit written), last-owner and owner-only rules."""
import pytest

from platform_app.models import ApiToken, AuditEvent, Membership
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def member(workspace, user):
    return Membership.objects.get(workspace=workspace, user=user)


def test_list_members(alice, bob, workspace, as_user):
    res = as_user(bob).get("/v1/orgs/acme/members")
    assert res.status_code == 200
    emails = {m["user"]["email"]: m["role"] for m in res.json()["items"]}
    assert emails == {"alice@example.com": "owner", "bob@example.com": "developer"}
    assert "password" not in str(res.json())


def test_owner_changes_role_and_audits(alice, bob, workspace, as_user):
    mem = member(workspace, bob)
    res = as_user(alice).patch(f"/v1/orgs/acme/members/{mem.pk}", {"role": "admin"}, format="json")
    assert res.status_code == 200
    assert res.json()["role"] == "admin"
    assert member(workspace, bob).role == "admin"
    event = AuditEvent.objects.get(action="member.role_changed")
    assert event.data["from"] == "developer" and event.data["to"] == "admin"


def test_member_addressed_by_user_id(alice, bob, workspace, as_user):
    res = as_user(alice).patch(f"/v1/orgs/acme/members/{bob.pk}", {"role": "viewer"}, format="json")
    assert res.status_code == 200
    assert member(workspace, bob).role == "viewer"


def test_unknown_role_is_400(alice, bob, workspace, as_user):
    res = as_user(alice).patch(f"/v1/orgs/acme/members/{bob.pk}", {"role": "emperor"}, format="json")
    assert res.status_code == 400
    assert res.json()["code"] == "validation_error"
    assert member(workspace, bob).role == "developer"


def test_unknown_field_is_400(alice, bob, workspace, as_user):
    res = as_user(alice).patch(f"/v1/orgs/acme/members/{bob.pk}", {"role": "admin", "userId": "x"}, format="json")
    assert res.status_code == 400
    assert member(workspace, bob).role == "developer"


def test_last_owner_cannot_be_demoted_or_removed(alice, workspace, as_user):
    mem = member(workspace, alice)
    client = as_user(alice)
    res = client.patch(f"/v1/orgs/acme/members/{mem.pk}", {"role": "admin"}, format="json")
    assert res.status_code == 409 and res.json()["code"] == "last_owner"
    res = client.delete(f"/v1/orgs/acme/members/{mem.pk}")
    assert res.status_code == 409 and res.json()["code"] == "last_owner"
    assert member(workspace, alice).role == "owner"


def test_second_owner_can_be_demoted(alice, workspace, as_user):
    other = MembershipFactory(workspace=workspace, user=UserFactory(), role="owner")
    res = as_user(alice).patch(f"/v1/orgs/acme/members/{other.pk}", {"role": "developer"}, format="json")
    assert res.status_code == 200
    other.refresh_from_db()
    assert other.role == "developer"


def test_admin_cannot_touch_owner_role(alice, bob, workspace, as_user):
    admin = MembershipFactory(workspace=workspace, user=UserFactory(), role="admin")
    client = as_user(admin.user)
    res = client.patch(f"/v1/orgs/acme/members/{bob.pk}", {"role": "owner"}, format="json")
    assert res.status_code == 403 and res.json()["code"] == "forbidden"
    res = client.delete(f"/v1/orgs/acme/members/{alice.pk}")
    assert res.status_code == 403
    assert member(workspace, bob).role == "developer"
    assert member(workspace, alice).role == "owner"
    # but an admin manages non-owners
    res = client.patch(f"/v1/orgs/acme/members/{bob.pk}", {"role": "viewer"}, format="json")
    assert res.status_code == 200


def test_removal_revokes_member_tokens_for_that_workspace(alice, bob, workspace, as_user, as_token):
    bound = as_token(bob, scopes=["deploy"], workspace=workspace)
    assert bound.get("/v1/orgs/acme/projects").status_code == 200
    res = as_user(alice).delete(f"/v1/orgs/acme/members/{bob.pk}")
    assert res.status_code == 200
    assert not Membership.objects.filter(workspace=workspace, user=bob).exists()
    token = ApiToken.objects.get(user=bob, workspace=workspace)
    assert token.revoked_at is not None and token.revoked_reason == "member_removed"
    assert bound.get("/v1/orgs/acme/projects").status_code == 401
    event = AuditEvent.objects.get(action="member.removed")
    assert event.data["tokens_revoked"] == 1 and event.actor == alice
    assert AuditEvent.objects.filter(action="api_token.revoked", workspace=workspace).count() == 1


def test_removed_member_no_longer_sees_workspace(alice, bob, workspace, as_user):
    as_user(alice).delete(f"/v1/orgs/acme/members/{bob.pk}")
    assert as_user(bob).get("/v1/orgs/acme/members").status_code == 404


def test_members_of_other_workspace_are_404(alice, charlie, as_user):
    res = as_user(alice).delete(f"/v1/orgs/acme/members/{charlie.pk}")
    assert res.status_code == 404
    assert Membership.objects.filter(user=charlie).exists()
    assert as_user(charlie).get("/v1/orgs/acme/members").status_code == 404
