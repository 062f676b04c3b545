"""Every operation of the three OpenAPI documents, driven through the HTTP API with real ids:

- an operation that declares security answers 401 without credentials, in its service's error body, and
  writes nothing;
- a platform `/v1/orgs/{org_id}/...` operation answers 404 to a member of another workspace;
- a platform operation with `x-required-scope` answers 403 `insufficient_scope` to a token lacking it.

The operations are read from the documents the app serves, so a new route is checked the day it is added;
the public ones are listed below, so a route that loses its authentication by accident fails here.
"""
import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from platform_app.services.identity.scopes import ALL_SCOPES, scope_allows
from tests.factories import ApiTokenFactory
from tests.route_access_world import fill, row_counts, world_build

pytestmark = pytest.mark.django_db

SCHEMAS = {"platform": "/v1/openapi.json", "otp": "/api/v1/openapi.json", "warehouse": "/api/openapi.json"}
METHODS = ("get", "post", "put", "patch", "delete")


def collect():
    """(service, METHOD, path, operation) of every operation, from the documents the app serves (they need
    no database)."""
    client = Client()
    found = []
    for service, url in SCHEMAS.items():
        resp = client.get(url)
        assert resp.status_code == 200, (url, resp.content[:200])
        for path, item in json.loads(resp.content)["paths"].items():
            found += [(service, method.upper(), path, op) for method, op in item.items() if method in METHODS]
    return found


OPERATIONS = collect()


def is_public(op) -> bool:
    """No security requirement, or an empty one (`{}`: credentials optional)."""
    return not op.get("security") or {} in op["security"]


# Operations anyone may call: sign-in and sign-up, OAuth starts and callbacks (they carry a signed state),
# agents and builders (their own node and job tokens), deploy hooks (the secret is the credential), invitation lookup, preview
# passwords, the code-host, payments and SMS provider webhooks (signed bodies), and the warehouse directory.
PUBLIC = {
    "GET /health",
    # the public status page's data (docs/staff.md)
    "GET /v1/status/public", "GET /v1/status/slo/{key}/history",
    "POST /v1/agents/join", "POST /v1/agents/{node_id}/heartbeat", "POST /v1/agents/{node_id}/leave",
    "POST /v1/agents/{node_id}/builds/claim", "GET /v1/agents/{node_id}/artifacts/{deployment_id}",
    # a build job's routes: the job's own token, made when a builder claims it
    "GET /v1/builds/{deployment_id}/source", "POST /v1/builds/{deployment_id}/logs",
    "PUT /v1/builds/{deployment_id}/artifact", "POST /v1/builds/{deployment_id}/finish",
    "GET /v1/auth/git-a/start", "GET /v1/auth/git-a/callback", "GET /v1/auth/git-a/sso/callback",
    "GET /v1/auth/git-a/user-callback", "GET /v1/auth/git-b/start", "GET /v1/auth/git-b/callback",
    "GET /v1/auth/git-b/sso/callback", "GET /v1/auth/git-c/callback",
    "GET /v1/auth/idp/start", "GET /v1/auth/idp/callback",
    "POST /v1/auth/sign-in", "POST /v1/auth/sign-up", "POST /v1/auth/sign-out", "POST /v1/auth/refresh",
    "POST /v1/auth/email/verify",  # the emailed link's token is the credential
    "POST /v1/hooks/deploy/{secret}", "GET /v1/invitations/{token}",
    "GET /v1/preview-protection/{project_id}/check", "POST /v1/preview-protection/{project_id}/verify",
    "POST /v1/webhooks/git-a", "POST /v1/webhooks/payments",
    # workspace single sign-on: the state is signed like social sign-in's (docs/org.md)
    "GET /v1/auth/sso/{org}/start", "GET /v1/auth/sso/{org}/callback",
    # feedback from visitors who are not signed in (limited per client address)
    "POST /v1/feedback",
    # web analytics: visitors' browsers on deployed sites fetch the tracker script and send its beacons
    "GET /v1/analytics/{project_id}/svc.js", "POST /v1/analytics/{project_id}/beacon",
    # the MCP endpoint checks its bearer token itself (401 with WWW-Authenticate, MCP's authorization); OAuth's
    # authorize (a consent page for a signed-in user), token and client registration
    "GET /v1/mcp", "POST /v1/mcp", "DELETE /v1/mcp", "GET /v1/mcp/authorize", "POST /v1/mcp/authorize",
    "POST /v1/mcp/token", "POST /v1/mcp/register",
    "POST /v1/auth/device/code", "POST /v1/auth/device/token",  # RFC 8628: the device has no credential yet
    "POST /api/v1/callbacks/twilio",
    "POST /api/auth/login", "POST /api/auth/signup", "GET /api/health",
    "GET /api/warehouses", "GET /api/warehouses/search", "GET /api/warehouses/{slug}", "GET /api/cities",
    "GET /api/regions", "GET /api/operators", "GET /api/facility-types", "GET /api/rates",
}

# Secured operations this module cannot drive generically. Keep it short; each entry says why.
EXCLUDED: set[str] = {
    # Not a user route: only the platform's INTERNAL_API_TOKEN opens it (scheme `internalToken`), user and API
    # tokens are 401 by design, so the member/scope checks here do not apply. Its own tests
    # (tests/platform_app/automation/test_alerts.py) check no credentials, a user JWT and an API token: 401.
    "POST /v1/internal/alerts/{rule_id}/fire",
    # The same for the outside database provisioner's route (tests/platform_app/resources/test_dedicated_dbs_api.py).
    "POST /v1/internal/dedicated-dbs/{db_id}/mark-ready",
}

SECURED = [(s, m, p, op) for s, m, p, op in OPERATIONS if not is_public(op) and f"{m} {p}" not in EXCLUDED]
IN_ORG = [(s, m, p, op) for s, m, p, op in SECURED if p.startswith("/v1/orgs/{org_id}")]
SCOPED = [(s, m, p, op) for s, m, p, op in SECURED if op.get("x-required-scope")]


def ids(cases):
    return [f"{m} {p}" for _, m, p, _ in cases]


@pytest.fixture
def world():
    return world_build()


def call(client, method: str, path: str):
    """Writes carry `{}`: authentication and scope are checked before the body is validated."""
    if method == "GET":
        return client.get(path)
    return getattr(client, method.lower())(path, {}, format="json")


def test_public_operations_are_exactly_the_listed_ones():
    public = {f"{m} {p}" for _, m, p, op in OPERATIONS if is_public(op)}
    assert public == PUBLIC, {"newly public": sorted(public - PUBLIC), "no longer public": sorted(PUBLIC - public)}


def test_exclusions_name_secured_operations_that_exist():
    secured = {f"{m} {p}" for _, m, p, op in OPERATIONS if not is_public(op)}
    assert EXCLUDED <= secured, sorted(EXCLUDED - secured)


def test_every_service_has_secured_operations():
    assert {s for s, *_ in SECURED} == set(SCHEMAS)
    assert IN_ORG and SCOPED


def unauthenticated_body_ok(service: str, body) -> bool:
    if service == "platform":
        return (set(body) == {"code", "message", "details", "status"} and body["status"] == 401
                and body["code"] in ("unauthenticated", "not_authenticated"))
    if service == "otp":
        return set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    return set(body) >= {"error", "code"} and isinstance(body["error"], str)


@pytest.mark.parametrize("service, method, path, op", SECURED, ids=ids(SECURED))
def test_no_credentials_is_401_and_writes_nothing(world, service, method, path, op):
    url = fill(path, world.path_values)
    before = row_counts()
    resp = call(APIClient(), method, url)
    assert resp.status_code == 401, resp.content[:300]
    assert unauthenticated_body_ok(service, resp.json()), resp.json()
    assert row_counts() == before


@pytest.mark.parametrize("service, method, path, op", IN_ORG, ids=ids(IN_ORG))
def test_member_of_another_workspace_gets_404(world, service, method, path, op):
    url = fill(path, world.path_values)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.charlie_access}")
    before = row_counts()
    resp = call(client, method, url)
    assert resp.status_code == 404, resp.content[:300]
    body = resp.json()
    assert set(body) == {"code", "message", "details", "status"} and body["code"] == "not_found", body
    assert row_counts() == before


def lacking(required: str) -> str:
    """A scope that does not satisfy `required` (read for most; env:read for `read` itself)."""
    return next(s for s in ALL_SCOPES if not scope_allows({s}, required))


@pytest.mark.parametrize("service, method, path, op", SCOPED, ids=ids(SCOPED))
def test_token_without_the_scope_gets_403(world, service, method, path, op):
    required = op["x-required-scope"]
    held = lacking(required)
    raw = "svc_routeaccess" + "y" * 40
    ApiTokenFactory(user=world.alice, scopes=[held], raw=raw)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    before = row_counts()
    resp = call(client, method, fill(path, world.path_values))
    assert resp.status_code == 403, resp.content[:300]
    assert resp.json() == {"code": "insufficient_scope", "message": f"This action requires the `{required}` scope.",
                           "details": {"requiredScope": required, "tokenScopes": [held]}, "status": 403}
    assert row_counts() == before


# Listing a provider's repositories asks the provider itself, which the workspace is not connected to; so does
# listing payment methods (the test settings configure no payments provider: 409 payments_not_configured). Staff
# routes answer alice (no staff) 403 (tests/platform_app/staff/ read them as staff).
READS = [(s, m, p, op) for s, m, p, op in SECURED if m == "GET" and "{" in p and s == "platform"
         and p not in ("/v1/orgs/{org_id}/git/{provider}/repos", "/v1/orgs/{org_id}/billing/payment-methods")
         and not p.startswith("/v1/admin/")]


@pytest.mark.parametrize("service, method, path, op", READS, ids=ids(READS))
def test_owner_reads_the_same_ids(world, service, method, path, op):
    """The ids above are real: the owner reads them (so charlie's 404 comes from the membership check)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.alice_access}")
    resp = call(client, method, fill(path, world.path_values))
    assert resp.status_code == 200, resp.content[:300]
