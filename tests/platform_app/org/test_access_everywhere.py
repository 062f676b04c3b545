"""One access check for every way into a workspace (services/org/access.py): REST routes, dashboard pages, MCP
tools, graduate/redeem, token creation with `orgId`, log streams — under an IP allowlist, under require-SSO, and as
each role, where a credential does what its scopes and the member's current role both allow. SCIM is the
directory's own channel and is not behind either rule (docs/org.md)."""
import json

import pytest
from django.test import Client

from platform_app.models import ApiToken, Deployment, Membership, WorkspaceSso
from tests.conftest import bearer_client
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.mcp.test_mcp_oauth import rpc
from tests.platform_app.org.conftest import SCIM_TOKEN, bearer
from tests.platform_app.org.factories import IpAllowlistEntryFactory, WorkspaceSsoFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(workspace, alice_client):
    project = ProjectFactory(workspace=workspace, slug="site")
    created = alice_client.post("/v1/orgs/acme/projects/site/env", {"key": "API_SECRET", "value": "s3cret",
                                                                   "target": ["production"]}, format="json")
    assert created.status_code == 201, created.json()
    return project


def mcp_tool(client, name, **arguments) -> dict:
    """A tools/call through /v1/mcp: the JSON-RPC error, or the tool's result (its text parsed)."""
    session = rpc(client, "initialize", {"protocolVersion": "2025-06-18"})["Mcp-Session-Id"]
    answer = rpc(client, "tools/call", {"name": name, "arguments": arguments}, session=session).json()
    if "error" in answer:
        return {"rpcError": answer["error"]}
    return json.loads(answer["result"]["content"][0]["text"])


def entry_points(client, deployment) -> dict:
    """What every way into acme answers this caller: status (and code) per entry point."""
    def http(resp):
        body = resp.json() if resp["Content-Type"].startswith("application/json") else {}
        return resp.status_code, body.get("code")

    def tool(result):
        return result.get("code") or ("ok" if "rpcError" not in result else result["rpcError"]["code"])

    ws = deployment.project.workspace
    return {
        "rest": http(client.get("/v1/orgs/acme/projects")),
        "stream": http(client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream")),
        "redeem": http(client.post("/v1/graduate/redeem", {"orgId": "acme", "redeemCode": "x" * 20}, format="json")),
        "token": http(client.post("/v1/user/tokens", {"name": "t", "scopes": "read", "orgId": ws.pk},
                                  format="json")),
        "list_projects": tool(mcp_tool(client, "list_projects", workspace="acme")),
        "list_env_vars": tool(mcp_tool(client, "list_env_vars", workspace="acme", project="site")),
        "trigger_deployment": tool(mcp_tool(client, "trigger_deployment", workspace="acme", project="site")),
    }


@pytest.fixture
def deployment(site):
    return DeploymentFactory(project=site, status="ready")


def test_every_entry_point_obeys_the_ip_allowlist(alice, workspace, deployment, as_token, settings):
    IpAllowlistEntryFactory(workspace=workspace, cidr="10.0.0.0/8")  # the test client is 127.0.0.1
    owner = as_token(alice, scopes=["admin"])
    answers = entry_points(owner, deployment)
    assert answers == {name: ((403, "ip_not_allowed") if isinstance(v, tuple) else "ip_not_allowed")
                       for name, v in answers.items()}, answers
    browser = Client()
    browser.force_login(alice)
    assert browser.get("/dashboard/acme/").status_code == 403
    assert not Deployment.objects.exclude(pk=deployment.pk).exists() and ApiToken.objects.count() == 1
    # SCIM is the directory's channel, not a member's: the allowlist does not apply to it
    WorkspaceSsoFactory(workspace=workspace, enabled=False, issuer="", scim_raw=SCIM_TOKEN)
    assert bearer(SCIM_TOKEN).get("/scim/v2/Users").status_code == 200


def test_every_entry_point_obeys_require_sso(alice, bob, workspace, deployment, as_user, as_token):
    WorkspaceSsoFactory(workspace=workspace, enabled=True, require_sso=True)
    MembershipFactory(workspace=deployment.project.workspace, user=UserFactory(), role="viewer")
    Membership.objects.filter(user=bob).update(role="admin")
    for client in (as_user(bob), as_token(bob, scopes=["admin"])):  # a password session, an unlinked token
        answers = entry_points(client, deployment)
        assert answers == {name: ((403, "sso_required") if isinstance(v, tuple) else "sso_required")
                           for name, v in answers.items()}, answers
    # the owner is exempt (break-glass): every entry point lets her in
    answers = entry_points(as_token(alice, scopes=["admin"]), deployment)
    assert answers["rest"] == (200, None) and answers["list_projects"] == "ok"
    assert answers["token"][0] == 201 and answers["list_env_vars"] == "ok"


@pytest.mark.parametrize("role, values, rest_env, deploy", [
    ("owner", True, 200, "ok"), ("admin", True, 200, "ok"), ("developer", True, 200, "ok"),
    ("billing", False, 403, -32003), ("viewer", False, 403, -32003),
])
def test_each_role_gets_through_mcp_what_it_gets_through_rest(role, values, rest_env, deploy, workspace, site,
                                                                as_user):
    member = UserFactory()
    MembershipFactory(workspace=workspace, user=member, role=role)
    session = as_user(member)  # a session acts with its role's full rights, never more
    assert session.get("/v1/orgs/acme/projects/site/env").status_code == rest_env
    listed = mcp_tool(session, "list_env_vars", workspace="acme", project="site")
    assert ("value" in listed["variables"][0]) is values, listed
    triggered = mcp_tool(session, "trigger_deployment", workspace="acme", project="site")
    assert (triggered.get("rpcError", {}).get("code") or "ok") == deploy


def test_a_token_scope_above_the_holders_role_is_refused_at_creation(bob, workspace, as_user):
    Membership.objects.filter(user=bob).update(role="viewer")
    for body in ({"scopes": "env:read", "orgId": "acme"}, {"scopes": ["read", "deploy"]}):
        refused = as_user(bob).post("/v1/user/tokens", {"name": "t", **body}, format="json")
        assert refused.status_code == 403 and refused.json()["code"] == "scope_exceeds_role", refused.json()
        assert refused.json()["details"]["scope"] in ("env:read", "deploy")
    ok = as_user(bob).post("/v1/user/tokens", {"name": "t", "scopes": "read", "orgId": "acme"}, format="json")
    assert ok.status_code == 201 and not ApiToken.objects.exclude(pk=ok.json()["id"]).exists()


def test_a_demoted_members_old_token_loses_what_the_new_role_lacks(bob, workspace, site, as_token):
    token = as_token(bob, scopes=["env:read", "deploy"], workspace=workspace)
    listed = mcp_tool(token, "list_env_vars", workspace="acme", project="site")
    assert listed["variables"][0]["value"] == "s3cret"
    Membership.objects.filter(user=bob).update(role="viewer")
    assert token.get("/v1/orgs/acme/projects/site/env").status_code == 403
    listed = mcp_tool(token, "list_env_vars", workspace="acme", project="site")
    assert listed["variables"] and "value" not in listed["variables"][0]
    refused = mcp_tool(token, "trigger_deployment", workspace="acme", project="site")
    assert refused["rpcError"]["data"] == {"role": "viewer", "requiredScope": "deploy"}
    assert not Deployment.objects.exists()
