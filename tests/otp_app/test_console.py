"""The OTP console uses the key services of the API."""
import pytest
from django.test import Client

from otp_app.models import ApiKey
from platform_app.services.identity.keys import sha256_hex
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def signed_in(user):
    client = Client()
    client.post("/dashboard/login/", {"email": user.email, "password": PASSWORD})
    return client


def test_owner_creates_a_test_key_shown_once_then_revokes_it(alice, workspace):
    client = signed_in(alice)
    resp = client.post("/dashboard/otp/acme/", {"name": "ci", "mode": "test"})
    assert resp.status_code == 200
    key = ApiKey.objects.get()
    raw = resp.context["created"]
    assert raw.startswith("svc_test_") and key.key_hash == sha256_hex(raw)
    assert raw not in client.get("/dashboard/otp/acme/").content.decode()
    client.post(f"/dashboard/otp/acme/keys/{key.pk}/revoke")
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_developer_cannot_create_keys(bob, workspace):
    resp = signed_in(bob).post("/dashboard/otp/acme/", {"name": "x", "mode": "live"})
    assert resp.status_code == 403
    assert ApiKey.objects.count() == 0


def test_outsider_sees_404(charlie, workspace):
    assert signed_in(charlie).get("/dashboard/otp/acme/").status_code == 404
