"""Email verification: sign-up mails a link and still signs in at once; until the address is verified, its account
neither lists nor answers invitations to it (API and dashboard), and the dashboard says why and resends the link."""
import re
from datetime import timedelta
from urllib.parse import unquote

import pytest
from django.core import mail
from django.test import Client

from platform_app.models import Invitation, Membership, User
from tests.conftest import bearer_client
from tests.factories import PASSWORD, UserFactory
from tests.platform_app.pages.conftest import sign_in
from tests.platform_app.teams.factories import InvitationFactory

pytestmark = pytest.mark.django_db

LINK = re.compile(r"/verify-email/\?token=(\S+)")


def link_token(message) -> str:
    return unquote(LINK.search(message.body).group(1))


@pytest.fixture
def invited(workspace, alice):
    """A pending invitation of dora@example.com to acme, with a known link token."""
    return InvitationFactory(workspace=workspace, email="dora@example.com", raw="tok-dora", invited_by=alice)


@pytest.fixture
def dora(db):
    """Registered first, never verified: whoever it is, it only claims the address."""
    return UserFactory(email="dora@example.com", email_verified_at=None)


def sign_up(api, capture, email="dora@example.com"):
    with capture(execute=True):
        resp = api.post("/v1/auth/sign-up", {"email": email, "password": "a-long-passphrase-42"}, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def test_sign_up_returns_tokens_at_once_and_mails_a_link(api, django_capture_on_commit_callbacks):
    body = sign_up(api, django_capture_on_commit_callbacks)
    assert body["accessToken"] and body["refreshToken"] and body["user"]["emailVerified"] is False
    assert [m.to for m in mail.outbox] == [["dora@example.com"]]
    assert "/verify-email/?token=" in mail.outbox[0].body
    client = bearer_client(body["accessToken"])
    assert client.get("/v1/auth/me").json()["user"]["emailVerified"] is False

    resp = api.post("/v1/auth/email/verify", {"token": link_token(mail.outbox[0])}, format="json")
    assert resp.status_code == 200 and resp.json()["user"]["emailVerified"] is True
    assert User.objects.get(email="dora@example.com").email_verified_at is not None
    assert client.get("/v1/auth/me").json()["user"]["emailVerified"] is True


def test_an_unverified_account_neither_lists_nor_answers_invitations(dora, invited, as_user):
    client = as_user(dora)
    for resp in (client.get("/v1/invitations"), client.post("/v1/invitations/tok-dora/accept"),
                 client.post("/v1/invitations/tok-dora/decline")):
        body = resp.json()
        assert resp.status_code == 403 and body["code"] == "email_unverified", body
        assert body["status"] == 403 and "verif" in body["message"]
    assert not Membership.objects.filter(user=dora).exists()
    assert Invitation.objects.get().status == "pending"


def test_once_verified_the_invitation_is_listed_and_accepted(dora, invited, as_user, api,
                                                             django_capture_on_commit_callbacks):
    client = as_user(dora)
    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post("/v1/auth/email/verification")
    assert sent.status_code == 202 and sent.json() == {"email": "dora@example.com", "sent": True}
    assert api.post("/v1/auth/email/verify", {"token": link_token(mail.outbox[-1])}, format="json").status_code == 200
    assert [i["orgSlug"] for i in client.get("/v1/invitations").json()["items"]] == ["acme"]
    assert client.post("/v1/invitations/tok-dora/accept").status_code == 201
    assert Membership.objects.get(user=dora).workspace.slug == "acme"
    again = client.post("/v1/auth/email/verification")
    assert again.status_code == 409 and again.json()["code"] == "email_already_verified"


def test_bad_expired_and_stale_links_verify_nothing(dora, api, as_user, django_capture_on_commit_callbacks,
                                                    time_machine):
    with django_capture_on_commit_callbacks(execute=True):
        as_user(dora).post("/v1/auth/email/verification")
    token = link_token(mail.outbox[-1])
    for bad in ("", "nonsense", token[:-3] + "abc"):
        resp = api.post("/v1/auth/email/verify", {"token": bad}, format="json")
        assert resp.status_code == 400 and resp.json()["code"] in ("invalid_verification_link", "validation_error")
    # a link for an address the account no longer has
    User.objects.filter(pk=dora.pk).update(email="dora2@example.com")
    resp = api.post("/v1/auth/email/verify", {"token": token}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_verification_link"
    User.objects.filter(pk=dora.pk).update(email="dora@example.com")
    time_machine.move_to(dora.date_joined + timedelta(days=4))
    resp = api.post("/v1/auth/email/verify", {"token": token}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "verification_link_expired"
    dora.refresh_from_db()
    assert dora.email_verified_at is None


def test_resending_is_rate_limited(dora, as_user, settings, django_capture_on_commit_callbacks):
    settings.EMAIL_VERIFICATION_SENDS_PER_HOUR = 2
    client = as_user(dora)
    with django_capture_on_commit_callbacks(execute=True):
        assert [client.post("/v1/auth/email/verification").status_code for _ in range(3)] == [202, 202, 429]
    assert len(mail.outbox) == 2


# Dashboard ------------------------------------------------------------------------------------------------

def test_dashboard_says_why_invitations_are_hidden_and_resends_the_link(dora, invited,
                                                                        django_capture_on_commit_callbacks):
    browser = sign_in(dora)
    page = browser.get("/dashboard/").content.decode()
    assert "Acme" not in page  # the invitation is not listed
    assert "Verify your email address" in page and 'action="/dashboard/account/email/verify/"' in page
    with django_capture_on_commit_callbacks(execute=True):
        resp = browser.post("/dashboard/account/email/verify/")
    assert resp.status_code == 302 and mail.outbox[-1].to == ["dora@example.com"]

    invitation_page = browser.get("/invitations/tok-dora")
    assert invitation_page.status_code == 403
    text = invitation_page.content.decode()
    assert "Verify your email address" in text and 'value="accept"' not in text
    assert browser.post("/invitations/tok-dora", {"answer": "accept"}).status_code == 403
    assert not Membership.objects.filter(user=dora).exists()

    # the link of the email, opened in the browser
    verified = browser.get(f"/verify-email/?token={link_token(mail.outbox[-1])}")
    assert verified.status_code == 200 and "verified" in verified.content.decode()
    assert "Acme" in browser.get("/dashboard/").content.decode()
    assert browser.post("/invitations/tok-dora", {"answer": "accept"}).status_code == 302
    assert Membership.objects.filter(user=dora, workspace__slug="acme").exists()


def test_a_bad_link_in_the_browser_is_400(db):
    resp = Client().get("/verify-email/?token=nonsense")
    assert resp.status_code == 400 and "not valid" in resp.content.decode()


def test_dashboard_sign_up_mails_the_link(django_capture_on_commit_callbacks):
    browser = Client()
    with django_capture_on_commit_callbacks(execute=True):
        resp = browser.post("/dashboard/signup/", {"email": "erin@example.com", "password": PASSWORD, "name": "E"})
    assert resp.status_code == 302  # signed in at once
    assert mail.outbox[-1].to == ["erin@example.com"] and LINK.search(mail.outbox[-1].body)
