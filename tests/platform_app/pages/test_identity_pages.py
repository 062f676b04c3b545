"""Account pages: sign-up, sign-in with the MFA step, password change, MFA enrolment, API sessions."""
import pyotp
import pytest
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from platform_app.models import AuthSession, User
from platform_app.services.identity.auth import session_start
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_sign_up_creates_the_account_and_signs_in(db):
    client = Client()
    assert client.get("/dashboard/signup/").status_code == 200
    resp = client.post("/dashboard/signup/", {"name": "Dora", "email": "Dora@Example.com",
                                              "password": "a-long-enough-passphrase"})
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/"
    user = User.objects.get(email="dora@example.com")
    assert user.check_password("a-long-enough-passphrase")
    assert b"Welcome" in client.get("/dashboard/").content


@pytest.mark.parametrize("data, error", [
    ({"email": "not-an-email", "password": "a-long-enough-passphrase"}, b"valid email"),
    ({"email": "e@example.com", "password": "short"}, b"too short"),
    ({"email": "alice@example.com", "password": "a-long-enough-passphrase"}, b"already exists"),
])
def test_sign_up_refuses_bad_input_and_creates_nothing(alice, data, error):
    before = User.objects.count()
    resp = Client().post("/dashboard/signup/", data)
    assert resp.status_code == 400
    assert error in resp.content
    assert User.objects.count() == before


def test_sign_in_with_wrong_password_shows_the_error(alice):
    resp = Client().post("/dashboard/login/", {"email": alice.email, "password": "nope-nope-nope"})
    assert resp.status_code == 400
    assert b"Email or password is incorrect." in resp.content


def test_dashboard_requires_sign_in():
    resp = Client().get("/dashboard/")
    assert resp.status_code == 302 and resp["Location"].startswith("/dashboard/login/")


def test_session_cookie_works_on_the_api(owner):
    resp = owner.get("/v1/auth/me")
    assert resp.status_code == 200 and resp.json()["actingAs"]["type"] == "session"


def test_mfa_enrolment_then_sign_in_asks_for_the_code(owner, alice, travel):
    page = owner.get("/dashboard/account/mfa/")
    assert page.status_code == 200 and b"data:image/svg+xml;base64," in page.content
    device = TOTPDevice.objects.get(user=alice, confirmed=False)
    secret = page.context["enrolment"]["secret"]
    resp = owner.post("/dashboard/account/mfa/", {"factor": f"totp_{device.pk}", "code": "000000"})
    assert resp.status_code == 400 and b"not valid" in resp.content
    travel(31)  # past django-otp's throttle after a wrong code
    resp = owner.post("/dashboard/account/mfa/", {"factor": f"totp_{device.pk}", "code": pyotp.TOTP(secret).now()})
    assert resp.status_code == 302
    device.refresh_from_db()
    assert device.confirmed

    client = Client()
    step = client.post("/dashboard/login/", {"email": alice.email, "password": PASSWORD})
    assert step.status_code == 200 and b"Authentication code" in step.content
    assert client.get("/dashboard/").status_code == 302  # not signed in yet
    wrong = client.post("/dashboard/login/", {"code": "123456"})
    assert wrong.status_code == 400 and b"not valid" in wrong.content
    travel(31)  # a new time step: a code is never accepted twice
    done = client.post("/dashboard/login/", {"code": pyotp.TOTP(secret).now()})
    assert done.status_code == 302
    assert client.get("/dashboard/").status_code == 200


def test_password_change_keeps_this_session_and_ends_api_sessions(owner, alice):
    session_start(user=alice)
    resp = owner.post("/dashboard/account/", {"action": "password", "current_password": "wrong-one-entirely",
                                              "new_password": "another-long-passphrase"})
    assert resp.status_code == 400 and b"incorrect" in resp.content
    resp = owner.post("/dashboard/account/", {"action": "password", "current_password": PASSWORD,
                                              "new_password": "another-long-passphrase"})
    assert resp.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("another-long-passphrase")
    assert not AuthSession.objects.filter(user=alice, revoked_at__isnull=True).exists()
    assert owner.get("/dashboard/account/").status_code == 200


def test_api_sessions_are_listed_and_revoked(owner, alice, charlie):
    session_start(user=alice)
    session = AuthSession.objects.get(user=alice)
    other = (session_start(user=charlie), AuthSession.objects.get(user=charlie))[1]
    assert session.pk.encode() in owner.get("/dashboard/account/").content
    assert owner.post(f"/dashboard/account/sessions/{other.pk}/revoke").status_code == 404
    assert owner.post(f"/dashboard/account/sessions/{session.pk}/revoke").status_code == 302
    session.refresh_from_db()
    other.refresh_from_db()
    assert session.revoked_at is not None and other.revoked_at is None
