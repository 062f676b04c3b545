"""Sign-up → sign-in → refresh → sign-out, refresh rotation and reuse, sessions, bad input."""
import json

import pytest

from platform_app.models import AuthSession, RefreshToken, User
from tests.conftest import bearer_client
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def sign_up(api, email="new@example.com", password="a-Strong-passw0rd!", name="New"):
    return api.post("/v1/auth/sign-up", {"email": email, "password": password, "name": name}, format="json")


def sign_in(api, email, password=PASSWORD, **extra):
    return api.post("/v1/auth/sign-in", {"email": email, "password": password, **extra}, format="json")


def test_full_cycle_sign_up_sign_in_refresh_sign_out(api):
    resp = sign_up(api)
    assert resp.status_code == 201
    body = resp.json()
    assert body["user"]["email"] == "new@example.com"
    assert set(body) >= {"user", "accessToken", "refreshToken", "expiresIn"}
    assert "password" not in json.dumps(body)

    resp = sign_in(api, "NEW@example.com", "a-Strong-passw0rd!")
    assert resp.status_code == 200
    tokens = resp.json()
    me = bearer_client(tokens["accessToken"]).get("/v1/auth/me")
    assert me.status_code == 200
    assert me.json()["user"]["email"] == "new@example.com"
    assert me.json()["actingAs"]["type"] == "session"

    refreshed = api.post("/v1/auth/refresh", {"refreshToken": tokens["refreshToken"]}, format="json")
    assert refreshed.status_code == 200
    new = refreshed.json()
    assert new["refreshToken"] != tokens["refreshToken"]
    assert bearer_client(new["accessToken"]).get("/v1/auth/me").status_code == 200

    out = bearer_client(new["accessToken"]).post("/v1/auth/sign-out")
    assert out.status_code == 204
    after = bearer_client(new["accessToken"]).get("/v1/auth/me")
    assert after.status_code == 401
    assert after.json()["code"] == "token_revoked"
    assert api.post("/v1/auth/refresh", {"refreshToken": new["refreshToken"]}, format="json").status_code == 401


def test_refresh_tokens_are_stored_hashed(api):
    tokens = sign_up(api).json()
    assert not RefreshToken.objects.filter(token_hash=tokens["refreshToken"]).exists()
    assert RefreshToken.objects.count() == 1


def test_reusing_a_rotated_refresh_token_revokes_the_session(api):
    tokens = sign_up(api).json()
    first = api.post("/v1/auth/refresh", {"refreshToken": tokens["refreshToken"]}, format="json").json()
    reuse = api.post("/v1/auth/refresh", {"refreshToken": tokens["refreshToken"]}, format="json")
    assert reuse.status_code == 401
    assert reuse.json()["code"] == "token_revoked"
    session = AuthSession.objects.get()
    assert session.revoked_reason == "refresh_reuse"
    # the legitimate holder's newer tokens die with the session
    assert api.post("/v1/auth/refresh", {"refreshToken": first["refreshToken"]}, format="json").status_code == 401
    assert bearer_client(first["accessToken"]).get("/v1/auth/me").status_code == 401


def test_expired_refresh_token_is_401_token_expired(api, travel):
    tokens = sign_up(api).json()
    travel(60 * 60 * 24 * 31)
    resp = api.post("/v1/auth/refresh", {"refreshToken": tokens["refreshToken"]}, format="json")
    assert resp.status_code == 401
    assert resp.json()["code"] == "token_expired"


def test_expired_access_token_is_401_token_expired(api, travel):
    tokens = sign_up(api).json()
    travel(60 * 16)
    resp = bearer_client(tokens["accessToken"]).get("/v1/auth/me")
    assert resp.status_code == 401
    assert resp.json() == {"code": "token_expired", "message": "The access token has expired.", "details": None,
                           "status": 401}


def test_sessions_list_revoke_and_revoke_all(api):
    user = UserFactory()
    first = sign_in(api, user.email).json()
    second = sign_in(api, user.email).json()
    third = sign_in(api, user.email).json()
    client = bearer_client(first["accessToken"])

    listed = client.get("/v1/auth/sessions").json()["items"]
    assert len(listed) == 3
    assert [s["current"] for s in listed].count(True) == 1

    resp = client.post(f"/v1/auth/sessions/{second['sessionId']}/revoke")
    assert resp.status_code == 200
    assert resp.json()["active"] is False
    assert bearer_client(second["accessToken"]).get("/v1/auth/me").status_code == 401

    resp = client.post("/v1/auth/sessions/revoke-all")
    assert resp.status_code == 200
    assert resp.json() == {"revoked": 1}
    assert bearer_client(third["accessToken"]).get("/v1/auth/me").status_code == 401
    assert client.get("/v1/auth/me").status_code == 200  # the current session stays


def test_another_users_session_is_404(api):
    mine = sign_in(api, UserFactory().email).json()
    theirs = sign_in(api, UserFactory().email).json()
    resp = bearer_client(mine["accessToken"]).post(f"/v1/auth/sessions/{theirs['sessionId']}/revoke")
    assert resp.status_code == 404
    assert AuthSession.objects.get(pk=theirs["sessionId"]).revoked_at is None


# Bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("body, field", [
    ({"email": "x@example.com", "password": "a-Strong-passw0rd!", "isStaff": True}, "isStaff"),
    ({"email": "not-an-email", "password": "a-Strong-passw0rd!"}, "email"),
    ({"email": "x@example.com", "password": ["x"]}, "password"),
    ({"password": "a-Strong-passw0rd!"}, "email"),
])
def test_sign_up_rejects_bad_fields_and_writes_nothing(api, body, field):
    resp = api.post("/v1/auth/sign-up", body, format="json")
    assert resp.status_code == 400
    assert resp.json()["code"] == "validation_error"
    assert field in resp.json()["details"]
    assert User.objects.count() == 0


def test_sign_up_rejects_weak_password(api):
    resp = sign_up(api, password="password")
    assert resp.status_code == 400
    assert resp.json()["code"] == "weak_password"
    assert User.objects.count() == 0


def test_sign_up_with_taken_email_is_409(api):
    UserFactory(email="taken@example.com")
    resp = sign_up(api, email="Taken@example.com")
    assert resp.status_code == 409
    assert resp.json()["code"] == "email_taken"
    assert User.objects.count() == 1


def test_malformed_json_is_400(api):
    resp = api.generic("POST", "/v1/auth/sign-in", "{not json", content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["code"] == "malformed_json"
    assert resp.json()["status"] == 400


def test_array_body_is_400(api):
    resp = api.post("/v1/auth/sign-in", [1, 2], format="json")
    assert resp.status_code == 400


def test_wrong_method_is_405_in_error_shape(api):
    resp = api.get("/v1/auth/sign-in")
    assert resp.status_code == 405
    assert resp.json()["code"] == "method_not_allowed"


def test_unknown_route_is_404_in_error_shape(api):
    resp = api.get("/v1/no-such-thing")
    assert resp.status_code == 404
    assert resp.json()["code"] == "not_found"


def test_wrong_password_and_unknown_email_answer_alike(api):
    user = UserFactory()
    a = sign_in(api, user.email, "wrong-password-1")
    b = sign_in(api, "nobody@example.com", "wrong-password-1")
    assert a.status_code == b.status_code == 401
    assert a.json() == b.json()
    assert AuthSession.objects.count() == 0


def test_brute_force_on_one_account_is_429_with_retry_after(api, settings):
    user = UserFactory()
    for _ in range(settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP):  # from one address (test_sign_in_limits.py)
        assert sign_in(api, user.email, "wrong-password-1").status_code == 401
    resp = sign_in(api, user.email)  # even the right password is refused now
    assert resp.status_code == 429
    assert resp.json()["code"] == "rate_limited"
    assert int(resp["Retry-After"]) > 0
    assert AuthSession.objects.count() == 0


def test_brute_force_from_one_ip_is_429(api, settings):
    settings.AUTH_FAILURES_PER_IP = 3
    for n in range(3):
        sign_in(api, f"someone{n}@example.com", "wrong-password-1")
    resp = sign_in(api, UserFactory().email)
    assert resp.status_code == 429
