"""Warehouse cookies: tampered, expired and alg:none tokens; refresh; CSRF; logout; password change."""
import base64
import json

import pytest

from platform_app.models import AuthSession
from tests.factories import PASSWORD, UserFactory
from tests.warehouse_app.conftest import logged_in

pytestmark = pytest.mark.django_db


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _cleared(resp) -> bool:
    return all(resp.cookies[name].value == "" for name in ("ws-access-token", "ws-refresh-token"))


def test_tampered_token_is_401_and_clears_cookies_even_on_public_routes(customer_client):
    head, payload, sig = customer_client.cookies["ws-access-token"].value.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "usr_admin"
    customer_client.cookies["ws-access-token"] = f"{head}.{_b64(claims)}.{sig}"
    resp = customer_client.get("/api/warehouses")
    assert resp.status_code == 401
    assert "error" in resp.json()
    assert _cleared(resp)


def test_alg_none_token_is_401(customer_client):
    payload = customer_client.cookies["ws-access-token"].value.split(".")[1]
    customer_client.cookies["ws-access-token"] = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{payload}."
    resp = customer_client.get("/api/auth/me")
    assert resp.status_code == 401 and _cleared(resp)


def test_platform_token_is_not_a_warehouse_token(customer, customer_client):
    from platform_app.services.identity.auth import session_start

    customer_client.cookies["ws-access-token"] = session_start(user=customer).access_token  # audience platform
    assert customer_client.get("/api/auth/me").status_code == 401


def test_expired_access_token_is_renewed_with_the_refresh_cookie(customer_client, travel):
    old = customer_client.cookies["ws-access-token"].value
    travel(60 * 20)
    resp = customer_client.get("/api/auth/me")
    assert resp.status_code == 200
    assert resp.cookies["ws-access-token"].value not in ("", old)


def test_expired_access_without_refresh_is_401(customer_client, travel):
    del customer_client.cookies["ws-refresh-token"]
    travel(60 * 20)
    resp = customer_client.get("/api/auth/me")
    assert resp.status_code == 401 and resp.json()["code"] == "token_expired"


def test_cookie_writes_need_the_csrf_header(customer):
    client = logged_in(customer)
    client.credentials()  # drop the X-CSRF-Token header
    resp = client.post("/api/support", {"subject": "x", "body": "y"}, format="json")
    assert resp.status_code == 403 and resp.json()["code"] == "csrf_failed"


def test_anonymous_session_routes_are_401(api):
    resp = api.get("/api/quotes")
    assert resp.status_code == 401 and "error" in resp.json()


def test_logout_revokes_the_session_and_clears_cookies(customer_client):
    resp = customer_client.post("/api/auth/logout")
    assert resp.status_code == 200 and _cleared(resp)
    assert AuthSession.objects.get().revoked_at is not None


def test_password_change_needs_the_current_one_and_signs_out_other_sessions(customer):
    first, second = logged_in(customer), logged_in(customer)
    bad = first.post("/api/account/password", {"current_password": "nope-nope-1", "new_password": "Another-pass-99"},
                     format="json")
    assert bad.status_code == 400
    ok = first.post("/api/account/password", {"current_password": PASSWORD, "new_password": "Another-pass-99"},
                    format="json")
    assert ok.status_code == 200
    assert first.get("/api/auth/me").status_code == 200
    assert second.get("/api/auth/me").status_code == 401
    logged_in(customer, password="Another-pass-99")


def test_login_brute_force_is_429(api, settings):
    user = UserFactory()
    for _ in range(settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP):
        api.post("/api/auth/login", {"email": user.email, "password": "wrong-wrong-1"}, format="json")
    resp = api.post("/api/auth/login", {"email": user.email, "password": PASSWORD}, format="json")
    assert resp.status_code == 429 and "Retry-After" in resp


def test_signup_with_a_known_address_answers_as_for_a_new_one_and_mails_the_owner(api, customer, mailoutbox,
                                                                                 django_capture_on_commit_callbacks):
    new = api.post("/api/auth/signup", {"email": "new.person@example.com", "password": "Pallets-and-more-42",
                                        "name": "Nia"}, format="json")
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        known = api.post("/api/auth/signup", {"email": "Carla@Example.com", "password": "Pallets-and-more-42",
                                              "name": "Nia"}, format="json")
    assert (new.status_code, known.status_code) == (201, 201)
    assert set(known.json()) == set(new.json())
    assert {k: v for k, v in known.json().items() if k not in ("id", "email")} == \
        {k: v for k, v in new.json().items() if k not in ("id", "email")}
    assert known.json()["email"] == "carla@example.com" and known.json()["id"].startswith("usr_")
    assert known.json()["id"] != customer.pk
    assert UserFactory._meta.model.objects.filter(email__iexact="carla@example.com").count() == 1
    [mail] = mailoutbox
    assert mail.to == [customer.email] and "sign up" in mail.body and "reset your password" in mail.body
    assert logged_in(customer)  # the owner's password is untouched
