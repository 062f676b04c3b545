"""Access JWTs: RS256 with a kid published in the JWKS; tampering is refused."""
import base64
import json

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from platform_app.services.identity.keys import signing_key
from tests.conftest import bearer_client
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def _tokens(api):
    user = UserFactory()
    return api.post("/v1/auth/sign-in", {"email": user.email, "password": PASSWORD}, format="json").json()


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def test_access_token_verifies_against_the_published_jwks(api):
    access = _tokens(api)["accessToken"]
    jwks = api.get("/.well-known/jwks.json").json()
    header = jwt.get_unverified_header(access)
    assert header["alg"] == "RS256"
    jwk = next(k for k in jwks["keys"] if k["kid"] == header["kid"])
    key = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(jwk))
    claims = jwt.decode(access, key, algorithms=["RS256"], audience="platform")
    assert claims["sub"].startswith("usr_")
    assert "d" not in jwk  # never the private part


def test_changed_payload_is_401(api):
    access = _tokens(api)["accessToken"]
    head, payload, sig = access.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "usr_someoneelse"
    resp = bearer_client(f"{head}.{_b64(claims)}.{sig}").get("/v1/auth/me")
    assert resp.status_code == 401
    assert resp.json()["code"] == "invalid_token"


def test_alg_none_is_401(api):
    access = _tokens(api)["accessToken"]
    claims = jwt.decode(access, options={"verify_signature": False})
    forged = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}."
    resp = bearer_client(forged).get("/v1/auth/me")
    assert resp.status_code == 401


def test_hs256_signed_with_the_public_key_is_401(api):
    import hashlib
    import hmac

    access = _tokens(api)["accessToken"]
    claims = jwt.decode(access, options={"verify_signature": False})
    kid, private = signing_key()
    public_pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = f"{_b64({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{_b64(claims)}"
    sig = base64.urlsafe_b64encode(hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest())
    resp = bearer_client(f"{signing_input}.{sig.decode().rstrip('=')}").get("/v1/auth/me")
    assert resp.status_code == 401


def test_garbage_bearer_is_401(api):
    resp = bearer_client("not-a-token").get("/v1/auth/me")
    assert resp.status_code == 401
    assert resp["WWW-Authenticate"].startswith("Bearer")


def test_no_credentials_is_401_unauthenticated(api):
    resp = api.get("/v1/auth/me")
    assert resp.status_code == 401
    assert resp.json()["code"] == "unauthenticated"


def test_ws_token_is_short_lived_and_for_streams_only(api):
    access = _tokens(api)["accessToken"]
    resp = bearer_client(access).post("/v1/auth/ws-token")
    assert resp.status_code == 200
    stream = resp.json()["token"]
    claims = jwt.decode(stream, options={"verify_signature": False})
    assert claims["aud"] == "platform-stream"
    assert claims["exp"] - claims["iat"] <= 300
    # not usable as an access token
    assert bearer_client(stream).get("/v1/auth/me").status_code == 401
