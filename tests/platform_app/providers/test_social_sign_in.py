"""OpenID Connect and OAuth sign-in against a local provider server that signs ID tokens with its own key."""
import json
import time
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from werkzeug.wrappers import Response as WzResponse

from platform_app.models import AuthSession, LinkedIdentity, OAuthState, User
from platform_app.providers.oidc import _discovery, pkce_challenge
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
CLIENT = "platform-client"


class Idp:
    """A local OpenID provider: discovery, token endpoint, JWKS. `issuer` names it otherwise than the server's
    URL (a workspace's provider is reached through the outbound guard, which refuses the name `localhost`)."""

    def __init__(self, server, issuer: str | None = None):
        self.server, self.issuer = server, (issuer or server.url_for("")).rstrip("/")
        self.claims, self.signing_key, self.token_requests = {}, KEY, []
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
        jwk.update(kid="idp-key", alg="RS256", use="sig")
        server.expect_request("/.well-known/openid-configuration").respond_with_json({
            "issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks"})
        server.expect_request("/jwks").respond_with_json({"keys": [jwk]})
        server.expect_request("/token", method="POST").respond_with_handler(self.token)

    def token(self, request):
        form = {k: v[0] for k, v in parse_qs(request.get_data(as_text=True)).items()}
        self.token_requests.append(form)
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": CLIENT, "sub": "idp-user-1", "iat": now, "exp": now + 300,
                  "email": "ada@example.com", "email_verified": True, "nonce": self.nonce, **self.claims}
        token = jwt.encode(claims, self.signing_key, algorithm="RS256", headers={"kid": "idp-key"})
        return WzResponse(json.dumps({"access_token": "at", "token_type": "Bearer", "id_token": token}),
                          content_type="application/json")


@pytest.fixture
def idp(httpserver, settings):
    _discovery.cache_clear()
    provider = Idp(httpserver)
    settings.IDP = {"issuer": provider.issuer, "client_id": CLIENT, "client_secret": "s", "scope": "openid email"}
    return provider


def start(api, idp, **params):
    resp = api.get("/v1/auth/idp/start", params)
    assert resp.status_code == 200, resp.content
    query = {k: v[0] for k, v in parse_qs(urlsplit(resp.json()["url"]).query).items()}
    idp.nonce = query["nonce"]
    return resp.json()["state"], query


def test_full_oidc_sign_in_with_pkce(api, idp):
    state, query = start(api, idp, returnTo="/dashboard/")
    assert query["code_challenge_method"] == "S256" and query["client_id"] == CLIENT
    resp = api.get("/v1/auth/idp/callback", {"code": "the-code", "state": state})
    assert resp.status_code == 200, resp.content
    assert resp.json()["user"]["email"] == "ada@example.com" and resp.json()["accessToken"]
    assert resp.json()["returnTo"] == "/dashboard/"
    sent = idp.token_requests[0]
    assert sent["code"] == "the-code" and pkce_challenge(sent["code_verifier"]) == query["code_challenge"]
    assert LinkedIdentity.objects.get().subject == "idp-user-1"
    again = api.get("/v1/auth/idp/callback", {"code": "the-code", "state": state})
    assert again.status_code == 400 and again.json()["code"] == "invalid_state"  # single use
    state2, _ = start(api, idp)
    assert api.get("/v1/auth/idp/callback", {"code": "c", "state": state2}).json()["user"]["email"] == "ada@example.com"
    assert User.objects.count() == 1


def test_existing_account_with_the_verified_email_is_linked_not_duplicated(api, idp):
    existing = UserFactory(email="ada@example.com")
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert resp.json()["user"]["id"] == existing.pk
    assert User.objects.count() == 1 and LinkedIdentity.objects.get().user == existing


def test_unverified_email_never_takes_over_an_account(api, idp):
    UserFactory(email="ada@example.com")
    idp.claims = {"email_verified": False}
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert resp.status_code == 409 and LinkedIdentity.objects.count() == 0


@pytest.mark.parametrize("bad", [{"aud": "someone-else"}, {"nonce": "replayed"}, {"iss": "https://evil.example"},
                                 "wrong-key"])
def test_bad_id_tokens_are_refused_and_nothing_is_written(api, idp, bad):
    if bad == "wrong-key":
        idp.signing_key = OTHER_KEY
    else:
        idp.claims = bad
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert resp.status_code == 401 and resp.json()["code"] == "invalid_id_token"
    assert User.objects.count() == 0 and AuthSession.objects.count() == 0


def test_tampered_state_and_foreign_return_to(api, idp):
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state[:-2] + "xx"})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_state"
    foreign = api.get("/v1/auth/idp/start", {"returnTo": "https://evil.example/steal"})
    assert foreign.status_code == 400 and foreign.json()["code"] == "invalid_return_to"
    assert OAuthState.objects.count() == 1


@pytest.mark.parametrize("return_to", ["/\\evil.example/x", "/\\/evil.example", "/dash\\board", "/dash\tboard",
                                       "/\r\nLocation: https://evil.example", "/a\x7fb"])
def test_a_return_to_with_a_backslash_or_control_character_is_refused(api, idp, return_to):
    """Browsers read `/\\` as `//` (another host) and drop tabs and newlines from a URL."""
    resp = api.get("/v1/auth/idp/start", {"returnTo": return_to})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_return_to"
    assert OAuthState.objects.count() == 0


def test_not_configured_is_503(api, settings):
    settings.IDP = {"issuer": "", "client_id": "", "client_secret": "", "scope": "openid"}
    resp = api.get("/v1/auth/idp/start")
    assert resp.status_code == 503 and resp.json()["code"] == "provider_not_configured"
    assert api.get("/v1/auth/git-b/start").status_code == 503
    assert OAuthState.objects.count() == 0


def test_git_a_oauth_sign_in(api, httpserver, settings):
    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS, "git-a": {
        **settings.GIT_PROVIDERS["git-a"], "client_id": "gh-client", "client_secret": "gh-secret",
        "token_url": httpserver.url_for("/login/oauth/access_token"), "api_url": httpserver.url_for("/api")}}
    httpserver.expect_request("/login/oauth/access_token", method="POST").respond_with_json({"access_token": "gho_x"})
    httpserver.expect_request("/api/user", headers={"Authorization": "Bearer gho_x"}).respond_with_json(
        {"id": 42, "login": "octo", "email": None})
    httpserver.expect_request("/api/user/emails").respond_with_json(
        [{"email": "Octo@Example.com", "primary": True, "verified": True}])
    state = api.get("/v1/auth/git-a/start").json()["state"]
    resp = api.get("/v1/auth/git-a/sso/callback", {"code": "abc", "state": state})
    assert resp.status_code == 200 and resp.json()["user"]["email"] == "octo@example.com"
    form = parse_qs(httpserver.log[0][0].get_data(as_text=True))
    assert form["client_id"] == ["gh-client"] and form["code"] == ["abc"]
    assert LinkedIdentity.objects.get().subject == "42"


# Email verification: the provider's word counts only when it says verified -------------------------------

def test_a_provider_that_asserts_a_verified_email_makes_a_verified_account(api, idp):
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert resp.status_code == 200 and resp.json()["user"]["emailVerified"] is True
    assert User.objects.get().email_verified_at is not None


def test_an_unverified_provider_email_makes_an_unverified_account(api, idp):
    idp.claims = {"email_verified": False}
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert resp.status_code == 200 and resp.json()["user"]["emailVerified"] is False
    assert User.objects.get().email_verified_at is None


def test_a_verified_provider_email_never_joins_an_account_whose_address_is_unverified(api, idp):
    """Whoever registered the address first with a password has proved nothing: joining the provider identity to
    that account would hand its owner's sign-ins to them."""
    squatter = UserFactory(email="ada@example.com", email_verified_at=None)
    state, _ = start(api, idp)
    resp = api.get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert resp.status_code == 409 and resp.json()["code"] == "account_unverified"
    assert LinkedIdentity.objects.count() == 0 and AuthSession.objects.filter(user=squatter).count() == 0


def test_sso_callback_with_a_blank_code_is_400_before_the_provider_is_asked(api, httpserver, settings):
    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS, "git-a": {
        **settings.GIT_PROVIDERS["git-a"], "client_id": "gh-client", "client_secret": "gh-secret",
        "token_url": httpserver.url_for("/login/oauth/access_token"), "api_url": httpserver.url_for("/api")}}
    state = api.get("/v1/auth/git-a/start").json()["state"]
    resp = api.get("/v1/auth/git-a/sso/callback", {"code": "", "state": state})
    assert resp.status_code == 400 and resp.json()["details"] == {"code": ["Required."]}
    assert len(httpserver.log) == 0 and OAuthState.objects.count() == 1  # the state is still there, unspent


def test_social_sign_in_ends_only_in_the_browser_that_started_it(api, idp):
    from rest_framework.test import APIClient

    state, _ = start(api, idp)
    assert api.cookies["oauth_binding"]["path"] == "/v1/auth/idp/callback"
    refused = APIClient().get("/v1/auth/idp/callback", {"code": "c", "state": state})
    assert refused.status_code == 403 and refused.json()["code"] == "oauth_state_not_bound"
    assert not User.objects.exists() and not AuthSession.objects.exists()
    assert api.get("/v1/auth/idp/callback", {"code": "c", "state": state}).status_code == 200
