"""The dashboard pages use the same services as the API."""
import pytest
from django.test import Client

from platform_app.models import ApiToken, AuditEvent
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    resp = client.post("/dashboard/login/", {"email": user.email, "password": PASSWORD})
    assert resp.status_code == 302
    return client


def test_sign_in_with_wrong_password_shows_the_error(alice):
    resp = Client().post("/dashboard/login/", {"email": alice.email, "password": "nope-nope-nope"})
    assert resp.status_code == 400
    assert b"Email or password is incorrect." in resp.content


def test_dashboard_requires_sign_in():
    resp = Client().get("/dashboard/")
    assert resp.status_code == 302
    assert resp["Location"].startswith("/dashboard/login/")


def test_create_and_revoke_a_token_from_the_page(alice, workspace):
    client = signed_in(alice)
    assert b"Acme" in client.get("/dashboard/").content
    resp = client.post("/dashboard/acme/", {"name": "laptop", "scopes": ["read", "deploy"], "expires": "30d"})
    assert resp.status_code == 200
    token = ApiToken.objects.get()
    assert token.workspace == workspace and token.scopes == ["read", "deploy"]
    assert b"will not be shown again" in resp.content
    resp = client.post(f"/dashboard/acme/tokens/{token.pk}/revoke")
    assert resp.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(action="api_token.revoked", target_id=token.pk).exists()


def test_session_cookie_works_on_the_api(alice):
    client = signed_in(alice)
    resp = client.get("/v1/auth/me")
    assert resp.status_code == 200
    assert resp.json()["actingAs"]["type"] == "session"


def test_outsider_workspace_page_is_404(charlie, workspace):
    assert signed_in(charlie).get("/dashboard/acme/").status_code == 404
