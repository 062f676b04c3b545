"""Invitation life cycle: create + email, list, get by token, accept, decline, expiry, single use."""
import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from platform_app.models import AuditEvent, Invitation, Membership
from tests.factories import UserFactory
from tests.platform_app.teams.factories import InvitationFactory

pytestmark = pytest.mark.django_db(transaction=False)


def invite(client, email="dora@example.com", role="developer"):
    return client.post("/v1/orgs/acme/invitations", {"email": email, "role": role}, format="json")


def token_from_mail(message) -> str:
    return re.search(r"/invitations/([A-Za-z0-9_-]+)", message.body).group(1)


@pytest.fixture
def dora(db):
    return UserFactory(email="dora@example.com", name="Dora")


def test_full_life_cycle(alice, workspace, dora, as_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        res = invite(as_user(alice))
    assert res.status_code == 201
    body = res.json()
    assert body["email"] == "dora@example.com" and body["role"] == "developer" and body["status"] == "pending"
    assert "token" not in body and "tokenHash" not in body
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["dora@example.com"] and "Acme" in message.subject
    raw = token_from_mail(message)
    invitation = Invitation.objects.get()
    assert invitation.token_hash != raw and len(invitation.token_hash) == 64
    assert abs((invitation.expires_at - timezone.now()) - timedelta(days=7)) < timedelta(minutes=1)

    # Dora sees it in her list and through the link
    client = as_user(dora)
    mine = client.get("/v1/invitations").json()["items"]
    assert [i["orgSlug"] for i in mine] == ["acme"]
    assert client.get(f"/v1/invitations/{raw}").json()["orgName"] == "Acme"

    res = client.post(f"/v1/invitations/{raw}/accept")
    assert res.status_code == 201
    assert res.json()["member"]["role"] == "developer"
    assert Membership.objects.get(workspace=workspace, user=dora).role == "developer"
    invitation.refresh_from_db()
    assert invitation.status == "accepted"
    assert AuditEvent.objects.filter(action="invitation.accepted", actor=dora).exists()

    # single use
    res = client.post(f"/v1/invitations/{raw}/accept")
    assert res.status_code == 409 and res.json()["code"] == "invitation_used"
    assert client.get("/v1/invitations").json()["items"] == []


def test_accept_by_someone_else_is_404(alice, workspace, bob, as_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        invite(as_user(alice))
    raw = token_from_mail(mail.outbox[0])
    intruder = UserFactory(email="mallory@example.com")
    res = as_user(intruder).post(f"/v1/invitations/{raw}/accept")
    assert res.status_code == 404
    assert not Membership.objects.filter(user=intruder).exists()
    assert Invitation.objects.get().status == "pending"


def test_accept_needs_sign_in(alice, workspace, api):
    InvitationFactory(workspace=workspace, email="dora@example.com", raw="tok-anon")
    assert api.post("/v1/invitations/tok-anon/accept").status_code == 401
    assert Invitation.objects.get().status == "pending"


def test_expired_invitation(alice, workspace, dora, as_user):
    InvitationFactory(workspace=workspace, email="dora@example.com", raw="tok-old",
                      expires_at=timezone.now() - timedelta(seconds=1))
    res = as_user(dora).post("/v1/invitations/tok-old/accept")
    assert res.status_code == 409 and res.json()["code"] == "invitation_expired"
    assert not Membership.objects.filter(user=dora).exists()
    assert as_user(dora).get("/v1/invitations").json()["items"] == []


def test_decline(alice, workspace, dora, as_user):
    InvitationFactory(workspace=workspace, email="dora@example.com", raw="tok-no")
    client = as_user(dora)
    res = client.post("/v1/invitations/tok-no/decline")
    assert res.status_code == 201 and res.json()["status"] == "declined"
    assert client.post("/v1/invitations/tok-no/accept").status_code == 409
    assert not Membership.objects.filter(user=dora).exists()


def test_unknown_token_is_404(dora, as_user, api):
    assert api.get("/v1/invitations/nope").status_code == 404
    assert as_user(dora).post("/v1/invitations/nope/accept").status_code == 404


def test_inviting_existing_member_is_409(alice, bob, workspace, as_user):
    res = invite(as_user(alice), email="BOB@example.com")
    assert res.status_code == 409
    assert not Invitation.objects.exists() and mail.outbox == []


def test_unknown_role_is_400(alice, workspace, as_user):
    res = invite(as_user(alice), role="emperor")
    assert res.status_code == 400
    assert not Invitation.objects.exists()


def test_bad_email_is_400(alice, workspace, as_user):
    assert invite(as_user(alice), email="not-an-email").status_code == 400
    assert not Invitation.objects.exists()


def test_only_owner_invites_owner(alice, workspace, as_user):
    from tests.factories import MembershipFactory

    admin = MembershipFactory(workspace=workspace, user=UserFactory(), role="admin").user
    assert invite(as_user(admin), role="owner").status_code == 403
    assert invite(as_user(alice), role="owner").status_code == 201


def test_reinvite_revokes_previous_link(alice, workspace, dora, as_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        invite(as_user(alice))
        invite(as_user(alice), role="viewer")
    first, second = (token_from_mail(m) for m in mail.outbox)
    assert as_user(dora).post(f"/v1/invitations/{first}/accept").status_code == 409
    assert as_user(dora).post(f"/v1/invitations/{second}/accept").status_code == 201
    assert Membership.objects.get(user=dora, workspace=workspace).role == "viewer"


def test_workspace_list_of_invitations(alice, bob, workspace, as_user):
    InvitationFactory(workspace=workspace, email="x@example.com")
    res = as_user(alice).get("/v1/orgs/acme/invitations")
    assert res.status_code == 200 and [i["email"] for i in res.json()["items"]] == ["x@example.com"]
    assert as_user(bob).get("/v1/orgs/acme/invitations").status_code == 403
