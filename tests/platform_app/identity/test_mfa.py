"""TOTP enrolment and sign-in, with codes computed by an independent implementation (pyotp)."""
import pyotp
import pytest
from django_otp.plugins.otp_totp.models import TOTPDevice

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def _enrol(client):
    resp = client.post("/v1/auth/mfa/totp", {"name": "Phone"}, format="json")
    assert resp.status_code == 201
    return resp.json()


def test_enrolment_returns_secret_uri_and_qr(alice_client):
    body = _enrol(alice_client)
    assert body["otpauthUri"].startswith("otpauth://totp/")
    assert body["secret"] in body["otpauthUri"]
    assert body["qrCode"].startswith("data:image/svg+xml;base64,")
    assert body["factor"]["confirmed"] is False


def test_confirm_with_pyotp_code_then_sign_in_needs_it(api, alice, alice_client, travel):
    body = _enrol(alice_client)
    totp = pyotp.TOTP(body["secret"])
    resp = alice_client.post("/v1/auth/mfa/totp/confirm", {"factorId": body["factor"]["id"], "code": totp.now()},
                             format="json")
    assert resp.status_code == 201
    assert resp.json()["confirmed"] is True
    assert alice_client.get("/v1/auth/mfa").json()["items"][0]["confirmed"] is True

    resp = api.post("/v1/auth/sign-in", {"email": alice.email, "password": PASSWORD}, format="json")
    assert resp.status_code == 401
    assert resp.json()["code"] == "mfa_required"

    resp = api.post("/v1/auth/sign-in", {"email": alice.email, "password": PASSWORD, "totpCode": "000000"},
                    format="json")
    assert resp.status_code == 401
    assert resp.json()["code"] == "invalid_totp"

    travel(31)  # next time step: django-otp refuses a replayed code
    resp = api.post("/v1/auth/sign-in", {"email": alice.email, "password": PASSWORD, "totpCode": totp.now()},
                    format="json")
    assert resp.status_code == 200
    assert resp.json()["accessToken"]


def test_wrong_confirmation_code_is_400_and_stays_unconfirmed(alice, alice_client):
    body = _enrol(alice_client)
    resp = alice_client.post("/v1/auth/mfa/totp/confirm", {"code": "123456"}, format="json")
    assert resp.status_code == 400
    assert resp.json()["code"] == "invalid_code"
    assert not TOTPDevice.objects.filter(user=alice, confirmed=True).exists()


def test_letters_in_code_are_400(alice_client):
    _enrol(alice_client)
    resp = alice_client.post("/v1/auth/mfa/totp/confirm", {"code": "12ab56"}, format="json")
    assert resp.status_code == 400
    assert "code" in resp.json()["details"]


def test_delete_factor_lifts_the_requirement(api, alice, alice_client):
    body = _enrol(alice_client)
    alice_client.post("/v1/auth/mfa/totp/confirm", {"code": pyotp.TOTP(body["secret"]).now()}, format="json")
    resp = alice_client.delete(f"/v1/auth/mfa/{body['factor']['id']}")
    assert resp.status_code == 200
    assert TOTPDevice.objects.filter(user=alice).count() == 0
    assert api.post("/v1/auth/sign-in", {"email": alice.email, "password": PASSWORD}, format="json").status_code == 200


def test_someone_elses_factor_is_404(alice_client, as_user):
    body = _enrol(alice_client)
    other = as_user(UserFactory())
    assert other.delete(f"/v1/auth/mfa/{body['factor']['id']}").status_code == 404
    assert TOTPDevice.objects.count() == 1


def test_mfa_code_brute_force_is_429(api, alice, alice_client, settings):
    body = _enrol(alice_client)
    alice_client.post("/v1/auth/mfa/totp/confirm", {"code": pyotp.TOTP(body["secret"]).now()}, format="json")
    settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP = 3
    for _ in range(3):
        api.post("/v1/auth/sign-in", {"email": alice.email, "password": PASSWORD, "totpCode": "000000"}, format="json")
    resp = api.post("/v1/auth/sign-in", {"email": alice.email, "password": PASSWORD, "totpCode": "000000"},
                    format="json")
    assert resp.status_code == 429
    assert "Retry-After" in resp
