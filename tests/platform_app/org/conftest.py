"""What the org tests share: the local OpenID provider of the social sign-in tests, reached by a workspace through
the outbound guard (as http://127.0.0.1:<port>, which the test settings allow), a SCIM client and staff."""
from urllib.parse import parse_qs, urlsplit

import pytest
from rest_framework.test import APIClient

from platform_app.services.org import sso as sso_services
from tests.factories import SuperuserFactory, UserFactory
from tests.platform_app.providers.test_social_sign_in import CLIENT, Idp

SCIM_TOKEN = "scim_" + "t" * 43
SCIM_JSON = "application/scim+json"


@pytest.fixture
def workspace_idp(httpserver):
    """A local OpenID provider for workspace SSO: discovery, token endpoint and JWKS, signing its own ID tokens."""
    return Idp(httpserver, issuer=f"http://127.0.0.1:{httpserver.port}")


@pytest.fixture
def sso_on(workspace, alice, workspace_idp):
    """acme's single sign-on on the local provider, for example.com addresses; returns the settings row."""
    return sso_services.sso_update(workspace=workspace, actor=alice, enabled=True, issuer=workspace_idp.issuer,
                                   client_id=CLIENT, client_secret="s", allowed_domains=["example.com"],
                                   require_sso=False)


def sso_start(client, idp, org="acme", path="/v1/auth/sso/{org}/start", **params) -> tuple[str, dict]:
    """Start the workspace's sign-in; the provider will sign the nonce it was sent. (state, authorize query)."""
    resp = client.get(path.format(org=org), params)
    assert resp.status_code in (200, 302), resp.content[:300]
    url = resp.json()["url"] if resp.status_code == 200 else resp["Location"]
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    idp.nonce = query["nonce"]
    return query["state"], query


def sso_sign_in(client, idp, org="acme", **claims):
    """The whole API sign-in as the provider's user with `claims`: the callback's answer."""
    idp.claims = claims
    state, _ = sso_start(client, idp, org)
    return client.get(f"/v1/auth/sso/{org}/callback", {"code": "the-code", "state": state})


def bearer(value: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {value}")
    return client


@pytest.fixture
def scim():
    """An APIClient sending the workspace's SCIM token (see `scim_on`)."""
    return bearer(SCIM_TOKEN)


@pytest.fixture
def staff(db):
    return SuperuserFactory(email="staff@example.com")


@pytest.fixture
def dana(db):
    return UserFactory(email="dana@example.com", name="Dana")
