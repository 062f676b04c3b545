"""Every scope against read / deploy / env / admin routes, through the HTTP API.

A route that a scope allows answers anything but 401/403 (an empty body gives a
400 from validation, so nothing is written); one it does not allow answers the
exact `insufficient_scope` body.
"""
import pytest

from platform_app.services.identity.scopes import ALL_SCOPES, scope_allows
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

P = "/v1/orgs/acme/projects/{project}"
# One real route per required scope. Add a row when an area serves routes of that scope.
ROUTES = {
    "read": ("get", "/v1/orgs/acme"),
    "deploy": ("post", P + "/deployments"),
    "env:read": ("get", P + "/env"),
    "env:write": ("post", P + "/env"),
    "billing": ("post", "/v1/orgs/acme/billing/usage-cap"),
    "admin": ("post", "/v1/orgs/acme/api-tokens"),
}

# scope held → required scopes it satisfies (document 1 section 5, contract.md)
EXPECTED = {
    "read": {"read"},
    "deploy": {"read", "deploy"},
    "env:read": {"env:read"},
    "env:write": {"read", "env:read", "env:write"},
    "domains": {"read", "domains"},
    "billing": {"read", "billing"},
    "admin": {"read", "deploy", "env:read", "env:write", "domains", "billing", "admin"},
}


def test_scope_implications_table():
    for held in ALL_SCOPES:
        for required in ALL_SCOPES:
            assert scope_allows({held}, required) == (required in EXPECTED[held]), (held, required)


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Web", slug="web", git_url="file:///nowhere")


@pytest.mark.parametrize("held", list(EXPECTED))
@pytest.mark.parametrize("required", list(ROUTES))
def test_scope_against_route(alice, as_token, workspace, project, held, required):
    method, path = ROUTES[required]
    client = as_token(alice, scopes=[held], workspace=workspace)
    resp = getattr(client, method)(path.format(project=project.pk), {}, format="json")
    if required in EXPECTED[held]:
        assert resp.status_code not in (401, 403), resp.content
    else:
        assert resp.status_code == 403
        assert resp.json() == {
            "code": "insufficient_scope",
            "message": f"This action requires the `{required}` scope.",
            "details": {"requiredScope": required, "tokenScopes": [held]},
            "status": 403,
        }


def test_token_never_exceeds_its_owners_role(bob, as_token, workspace):
    """bob is a developer: an `admin` token of his still cannot manage tokens."""
    resp = as_token(bob, scopes=["admin"], workspace=workspace).post("/v1/orgs/acme/api-tokens", {}, format="json")
    assert resp.status_code == 403
    assert resp.json()["code"] == "forbidden"
