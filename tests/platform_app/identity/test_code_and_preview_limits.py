"""MFA codes and preview passwords: the sign-in scheme (counted in the database before the check)."""
import base64

import pyotp
import pytest
from django.db import connection
from django_otp.plugins.otp_totp.models import TOTPDevice

from platform_app.models import AttemptCounter
from platform_app.services.identity.auth import session_start
from platform_app.services.edge.preview import protection_set
from tests.factories import PASSWORD, UserFactory
from tests.platform_app.identity.conftest import OWNER, STRANGER, client_from, counted, race, sign_in
from tests.platform_app.identity.factories import TOTPDeviceFactory
from tests.platform_app.projects.factories import ProjectFactory

PREVIEW_PASSWORD = "open-sesame-42"


def totp_of(device: TOTPDevice) -> pyotp.TOTP:
    return pyotp.TOTP(base64.b32encode(device.bin_key).decode())


@pytest.fixture
def protected(workspace):
    project = ProjectFactory(workspace=workspace, name="Shop", slug="shop", git_url="file:///nowhere")
    protection_set(project=project, mode="password", password=PREVIEW_PASSWORD)
    return project


def verify(client, project, password):
    return client.post(f"/v1/preview-protection/{project.pk}/verify", {"password": password}, format="json")


# MFA ------------------------------------------------------------------------------------------

@pytest.mark.django_db
def test_wrong_codes_are_limited_per_pair_and_the_owner_gets_in_elsewhere(clock, travel, settings):
    settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP = 3
    user = UserFactory()
    totp = totp_of(TOTPDeviceFactory(user=user, name="Phone", confirmed=True))
    stranger = client_from(STRANGER)  # knows the password, guesses codes
    for _ in range(3):
        resp = sign_in(stranger, user.email, totpCode="000000")
        assert resp.status_code == 401 and resp.json()["code"] == "invalid_totp"
    resp = sign_in(stranger, user.email, totpCode=totp.now())
    assert resp.status_code == 429 and resp.json()["details"]["retryAfter"] > 0
    assert counted(f"mfa:pair:{user.pk}|{STRANGER}") == 3
    assert counted(f"mfa:acct:{user.pk}") == 3
    travel(60)  # past django-otp's own back-off after failures, and a fresh time step
    assert sign_in(client_from(OWNER), user.email, totpCode=totp.now()).status_code == 200
    assert not AttemptCounter.objects.filter(key=f"mfa:pair:{user.pk}|{OWNER}").exists()
    assert counted(f"mfa:acct:{user.pk}") == 3  # the success gave back only its own attempt


@pytest.mark.django_db
def test_enrolment_confirm_codes_are_counted_too(clock, settings):
    settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP = 2
    user = UserFactory()
    TOTPDeviceFactory(user=user, name="Phone", confirmed=False)
    client = client_from(OWNER)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {session_start(user=user).access_token}")
    for _ in range(2):
        resp = client.post("/v1/auth/mfa/totp/confirm", {"code": "000000"}, format="json")
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_code"
    resp = client.post("/v1/auth/mfa/totp/confirm", {"code": "000000"}, format="json")
    assert resp.status_code == 429 and "Retry-After" in resp
    assert counted(f"mfa:pair:{user.pk}|{OWNER}") == 2
    assert not TOTPDevice.objects.filter(user=user, confirmed=True).exists()


# Preview passwords ----------------------------------------------------------------------------

@pytest.mark.django_db
def test_preview_attempts_per_address_reset_on_success(clock, protected, settings):
    settings.PREVIEW_ATTEMPTS_PER_WINDOW = 3
    stranger = client_from(STRANGER)
    for _ in range(3):
        assert verify(stranger, protected, "wrong-one").status_code == 401
    resp = verify(stranger, protected, PREVIEW_PASSWORD)
    assert resp.status_code == 429 and resp.json()["code"] == "rate_limited"
    assert counted(f"preview:pair:{protected.pk}|{STRANGER}") == 3
    visitor = client_from(OWNER)  # another address is not locked out
    assert verify(visitor, protected, "wrong-one").status_code == 401
    assert verify(visitor, protected, PREVIEW_PASSWORD).status_code == 201
    assert not AttemptCounter.objects.filter(key=f"preview:pair:{protected.pk}|{OWNER}").exists()


@pytest.mark.django_db
def test_preview_attempts_per_project_are_slowed(clock, travel, protected, settings):
    settings.PREVIEW_ATTEMPTS_PER_PROJECT, settings.AUTH_SLOWDOWN_BASE_SECONDS = 2, 3
    for n in range(2):
        assert verify(client_from(f"192.0.2.{n + 1}"), protected, "wrong-one").status_code == 401
    assert verify(client_from("192.0.2.10"), protected, "wrong-one").status_code == 401  # let through, then...
    resp = verify(client_from("192.0.2.11"), protected, PREVIEW_PASSWORD)
    assert resp.status_code == 429 and resp["Retry-After"] == "3"
    travel(3)
    assert verify(client_from("192.0.2.12"), protected, PREVIEW_PASSWORD).status_code == 201


# Races on PostgreSQL ----------------------------------------------------------------------------

@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_wrong_codes_and_preview_passwords_on_postgresql(clock, settings, workspace):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    user = UserFactory()
    TOTPDeviceFactory(user=user, name="Phone", confirmed=False)
    bearer = f"Bearer {session_start(user=user).access_token}"
    statuses = race(20, STRANGER, lambda c: c.post("/v1/auth/mfa/totp/confirm", {"code": "000000"}, format="json",
                                                   HTTP_AUTHORIZATION=bearer))
    limit = settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP
    assert statuses.count(400) == limit and statuses.count(429) == 20 - limit
    assert counted(f"mfa:pair:{user.pk}|{STRANGER}") == limit

    project = ProjectFactory(workspace=workspace, name="Shop", slug="shop", git_url="file:///nowhere")
    protection_set(project=project, mode="password", password=PREVIEW_PASSWORD)
    statuses = race(20, STRANGER, lambda c: verify(c, project, "wrong-one"))
    limit = settings.PREVIEW_ATTEMPTS_PER_WINDOW
    assert statuses.count(401) == limit and statuses.count(429) == 20 - limit
    assert counted(f"preview:pair:{project.pk}|{STRANGER}") == limit
    assert verify(client_from(OWNER), project, PREVIEW_PASSWORD).status_code == 201
    assert sign_in(client_from(OWNER), user.email, PASSWORD).status_code == 200
