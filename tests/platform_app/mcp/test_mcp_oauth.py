"""The MCP endpoint's authorization server and transport, request by request: discovery, registration, consent,
the code exchange's refusals, refresh rotation, sessions, and MCP tokens on the REST routes."""
import base64
import hashlib
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from platform_app.models import McpAuthorizationCode, McpClient, McpToken
from tests.conftest import bearer_client
from tests.factories import MembershipFactory, WorkspaceFactory
from tests.platform_app.mcp.factories import McpClientFactory, McpTokenFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body

pytestmark = pytest.mark.django_db

VERIFIER = "v" * 50
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()
REDIRECT = "http://127.0.0.1:9/callback"


def authorize_query(client_pk, /, **overrides) -> dict:
    query = {"response_type": "code", "client_id": client_pk, "redirect_uri": REDIRECT, "state": "s1",
             "code_challenge": CHALLENGE, "code_challenge_method": "S256", "scope": "read deploy"}
    return {**query, **overrides}


@pytest.fixture
def browser(alice):
    browser = Client()
    browser.force_login(alice)
    return browser


def approve(browser, query: dict, **form) -> dict:
    """The user approves the consent page; the redirect's query."""
    resp = browser.post("/v1/mcp/authorize", {**query, "decision": "approve", "granted": ["read", "deploy"], **form})
    assert resp.status_code == 302, resp.content[:300]
    assert resp["Location"].startswith(query["redirect_uri"])
    return {k: v[0] for k, v in parse_qs(urlsplit(resp["Location"]).query).items()}


def exchange(api, client_pk, code, /, **overrides):
    form = {"grant_type": "authorization_code", "code": code, "client_id": client_pk, "redirect_uri": REDIRECT,
            "code_verifier": VERIFIER}
    return api.post("/v1/mcp/token", urlencode({**form, **overrides}), content_type="application/x-www-form-urlencoded")


def test_discovery_metadata_and_the_401_that_points_to_them(api):
    resp = api.get("/v1/mcp")
    assert resp.status_code == 200
    body = resp.json()
    assert body["name"] == "platform" and "2025-11-25" in body["protocolVersions"]
    assert "trigger_deployment" in body["tools"] and body["authorizationServer"] == "http://testserver"
    refused = api.post("/v1/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, format="json")
    assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"
    assert refused["WWW-Authenticate"] == ('Bearer resource_metadata="http://testserver/.well-known/'
                                           'oauth-protected-resource/v1/mcp", scope="read deploy"')
    resource = api.get("/.well-known/oauth-protected-resource/v1/mcp").json()
    assert resource["resource"] == "http://testserver/v1/mcp"
    assert resource["authorization_servers"] == ["http://testserver"]
    server = api.get("/.well-known/oauth-authorization-server").json()
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["token_endpoint"] == "http://testserver/v1/mcp/token"
    assert server["registration_endpoint"] == "http://testserver/v1/mcp/register"
    assert api.get("/v1/mcp", HTTP_ACCEPT="text/event-stream").status_code == 401


@pytest.mark.parametrize("uris", [None, [], ["http://example.com/cb"], ["https://example.com/cb#frag"],
                                  ["javascript:alert(1)"], "https://example.com/cb", ["https://x.example/cb"] * 11])
def test_registration_refuses_redirects_that_could_leak_codes(api, uris):
    resp = api.post("/v1/mcp/register", {"client_name": "Agent", "redirect_uris": uris}, format="json")
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_redirect_uri"
    assert not McpClient.objects.exists()


@pytest.mark.parametrize("url, body, error", [
    ("/v1/mcp/register", b"\xbe\xef", "invalid_client_metadata"), ("/v1/mcp/register", b"[null, null]",
                                                                      "invalid_client_metadata"),
    ("/v1/mcp/token", b"{not json", "invalid_request")])
def test_a_body_that_does_not_parse_gets_an_oauth_error(api, url, body, error):
    resp = api.generic("POST", url, body, content_type="application/json")
    assert resp.status_code == 400 and resp.json()["error"] == error and resp.json()["error_description"]
    assert not McpClient.objects.exists()


def test_registration_makes_a_public_client(api):
    resp = api.post("/v1/mcp/register", {"client_name": "Agent", "redirect_uris": [REDIRECT, "https://a.example/cb"],
                                         "logo_uri": "https://a.example/logo.png"}, format="json")
    assert resp.status_code == 201
    body = resp.json()
    assert body["token_endpoint_auth_method"] == "none" and body["redirect_uris"] == [REDIRECT, "https://a.example/cb"]
    assert McpClient.objects.get(pk=body["client_id"]).name == "Agent"


@pytest.mark.parametrize("overrides,error", [
    ({"client_id": "mcpc_unknown"}, "Unknown client_id"),
    ({"redirect_uri": "https://attacker.example/cb"}, "redirect_uri is not one"),
    ({"redirect_uri": "http://127.0.0.1:9/other"}, "redirect_uri is not one"),
    ({"code_challenge": ""}, "PKCE"),
    ({"code_challenge_method": "plain"}, "PKCE"),
    ({"response_type": "token"}, "response_type=code"),
    ({"scope": "read everything"}, "Unknown scope"),
])
def test_a_bad_authorization_request_is_shown_never_redirected(browser, overrides, error):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    query = authorize_query(client.pk, **overrides)
    for resp in (browser.get("/v1/mcp/authorize", query), browser.post("/v1/mcp/authorize",
                                                                       {**query, "decision": "approve"})):
        assert resp.status_code == 400 and "Location" not in resp
        assert error in resp.content.decode()
    assert not McpAuthorizationCode.objects.exists()


def test_consent_needs_a_signed_in_user_and_a_loopback_redirect_may_use_any_port(api, browser):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    query = authorize_query(client.pk, redirect_uri="http://127.0.0.1:51234/callback")
    anonymous = Client().get("/v1/mcp/authorize", query)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/dashboard/login/?next=/v1/mcp/authorize")
    page = browser.get("/v1/mcp/authorize", query)
    assert page.status_code == 200 and 'value="http://127.0.0.1:51234/callback"' in page.content.decode()
    back = approve(browser, query)
    assert back["state"] == "s1" and back["code"]


def test_denying_or_granting_nothing_redirects_with_access_denied(browser):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    for form in ({"decision": "deny"}, {"decision": "approve", "granted": []}):
        resp = browser.post("/v1/mcp/authorize", {**authorize_query(client.pk), **form})
        assert resp.status_code == 302
        assert parse_qs(urlsplit(resp["Location"]).query) == {"error": ["access_denied"], "state": ["s1"]}
    assert not McpAuthorizationCode.objects.exists()


def test_the_code_exchange_and_its_refusals(api, browser, alice):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    code = approve(browser, authorize_query(client.pk), granted=["read"])["code"]
    for overrides, status, error in (({"code_verifier": "w" * 50}, 400, "invalid_grant"),
                                     ({"redirect_uri": "http://127.0.0.1:9/other"}, 400, "invalid_grant"),
                                     ({"client_id": McpClientFactory().pk}, 400, "invalid_grant"),
                                     ({"client_id": "nobody"}, 401, "invalid_client"),
                                     ({"grant_type": "password"}, 400, "unsupported_grant_type")):
        resp = exchange(api, client.pk, code, **overrides)
        assert resp.status_code == status and resp.json()["error"] == error, overrides
        assert resp["Cache-Control"] == "no-store"
    assert not McpToken.objects.exists()
    first = exchange(api, client.pk, code)
    assert first.status_code == 201
    tokens = first.json()
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "read" and tokens["expires_in"] == 3600
    assert tokens["access_token"].startswith("mcpa_") and tokens["refresh_token"].startswith("mcpr_")
    assert bearer_client(tokens["access_token"]).get("/v1/orgs/acme/projects").status_code == 200
    replay = exchange(api, client.pk, code)  # a stolen code replayed: refused, and what it made is revoked
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    revoked = bearer_client(tokens["access_token"]).get("/v1/orgs/acme/projects")
    assert revoked.status_code == 401 and revoked.json()["code"] == "token_revoked"


def test_an_expired_code_is_refused(api, browser, travel):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    code = approve(browser, authorize_query(client.pk))["code"]
    travel(601)
    resp = exchange(api, client.pk, code)
    assert resp.status_code == 400 and "expired" in resp.json()["error_description"]


def test_refresh_rotates_the_pair(api, browser):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    old = exchange(api, client.pk, approve(browser, authorize_query(client.pk))["code"]).json()
    refresh = {"grant_type": "refresh_token", "refresh_token": old["refresh_token"], "client_id": client.pk}
    new = api.post("/v1/mcp/token", refresh, format="json")
    assert new.status_code == 201 and new.json()["scope"] == "read deploy"
    again = api.post("/v1/mcp/token", refresh, format="json")
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert bearer_client(old["access_token"]).get("/v1/orgs/acme/projects").status_code == 401
    assert bearer_client(new.json()["access_token"]).get("/v1/orgs/acme/projects").status_code == 200


def test_an_mcp_token_has_its_scopes_and_binding_on_the_rest_routes(alice, workspace, travel):
    other = WorkspaceFactory(slug="other")
    MembershipFactory(workspace=other, user=alice)
    McpTokenFactory(user=alice, raw="mcpa_bound", scopes=["read"], workspace=workspace)
    client = bearer_client("mcpa_bound")
    assert client.get("/v1/orgs/acme/projects").status_code == 200
    assert client.get("/v1/orgs/other/projects").status_code == 404
    denied = client.post("/v1/orgs/acme/projects", {"name": "x"}, format="json")
    assert denied.status_code == 403
    travel(3601)
    expired = client.get("/v1/orgs/acme/projects")
    assert expired.status_code == 401 and expired.json()["code"] == "token_expired"


def rpc(client, method, params=None, msg_id=1, session=None):
    headers = {"HTTP_MCP_SESSION_ID": session} if session else {}
    message = {"jsonrpc": "2.0", "method": method, **({"id": msg_id} if msg_id is not None else {}),
               **({"params": params} if params is not None else {})}
    return client.post("/v1/mcp", message, format="json", **headers)


@pytest.fixture
def agent(alice):
    McpTokenFactory(user=alice, raw="mcpa_agent", scopes=["read", "deploy"])
    client = bearer_client("mcpa_agent")
    init = rpc(client, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}})
    assert init.status_code == 201 and init.json()["result"]["protocolVersion"] == "2025-06-18"
    return client, init["Mcp-Session-Id"]


def test_sessions_are_required_and_belong_to_their_user(agent, bob):
    client, session = agent
    assert rpc(client, "ping").status_code == 400
    assert rpc(client, "ping", session="forged").status_code == 404
    assert rpc(client, "ping", session=session).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    McpTokenFactory(user=bob, raw="mcpa_bob", scopes=["read"])
    assert rpc(bearer_client("mcpa_bob"), "ping", session=session).status_code == 404
    assert rpc(client, "notifications/initialized", msg_id=None, session=session).status_code == 202
    assert client.delete("/v1/mcp", HTTP_MCP_SESSION_ID=session).status_code == 204


def test_malformed_messages_get_json_rpc_errors(agent):
    client, session = agent
    bad = client.post("/v1/mcp", "{not json", content_type="application/json", HTTP_MCP_SESSION_ID=session)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
    assert rpc(client, "resources/list", session=session).json()["error"]["code"] == -32601
    assert rpc(client, "tools/call", {"name": 5}, session=session).json()["error"]["code"] == -32602
    wrong = rpc(client, "tools/call", {"name": "list_projects", "arguments": {"workspace": "acme", "x": 1}},
                session=session).json()["result"]
    assert wrong["isError"] and json.loads(wrong["content"][0]["text"])["code"] == "invalid_params"
    listed = rpc(client, "tools/list", session=session).json()["result"]["tools"]
    assert all(t["inputSchema"]["additionalProperties"] is False for t in listed)


@pytest.mark.parametrize("arguments", [{"lines": "abc"}, {"lines": True}, {"lines": 0}, {"lines": 1001},
                                       {"lines": 1.5}, {"deployment": 7}, {"workspace": "a" * 1000}])
def test_tool_arguments_outside_their_schema_are_invalid_params(agent, arguments):
    client, session = agent
    call = {"name": "deployment_logs", "arguments": {"workspace": "acme", "deployment": "dep_x", **arguments}}
    result = rpc(client, "tools/call", call, session=session).json()["result"]
    assert result["isError"] and json.loads(result["content"][0]["text"])["code"] == "invalid_params"


def test_a_tool_obeys_the_members_role_and_hides_other_workspaces(alice, workspace, travel):
    viewer_ws = WorkspaceFactory(slug="viewed")
    MembershipFactory(workspace=viewer_ws, user=alice, role="viewer")
    ProjectFactory(workspace=viewer_ws, slug="site")
    stranger = ProjectFactory(slug="theirs")
    McpTokenFactory(user=alice, raw="mcpa_agent", scopes=["read", "deploy"])
    client = bearer_client("mcpa_agent")
    session = rpc(client, "initialize", {"protocolVersion": "2025-11-25"})["Mcp-Session-Id"]
    refused = rpc(client, "tools/call", {"name": "trigger_deployment",
                                         "arguments": {"workspace": "viewed", "project": "site"}}, session=session)
    assert refused.json()["error"]["data"] == {"role": "viewer", "requiredScope": "deploy"}
    hidden = rpc(client, "tools/call", {"name": "list_projects",
                                        "arguments": {"workspace": stranger.workspace.slug}}, session=session)
    assert json.loads(hidden.json()["result"]["content"][0]["text"])["code"] == "not_found"
    from platform_app.models import Deployment

    assert not Deployment.objects.exists()


def test_tokens_and_codes_are_stored_as_hashes(api, browser):
    client = McpClientFactory(redirect_uris=[REDIRECT])
    code = approve(browser, authorize_query(client.pk))["code"]
    tokens = exchange(api, client.pk, code).json()
    stored = json.dumps(list(McpToken.objects.values())
                        + list(McpAuthorizationCode.objects.values()), default=str)
    assert code not in stored and tokens["access_token"] not in stored and tokens["refresh_token"] not in stored
    assert McpAuthorizationCode.objects.get().expires_at <= timezone.now() + timedelta(minutes=10)


def test_the_server_stream_opens_for_a_token_holder(agent, settings):
    settings.MCP_STREAM_SECONDS = 0
    client, _ = agent
    resp = client.get("/v1/mcp", HTTP_ACCEPT="text/event-stream")
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    assert sse_body(resp) == b": stream open\n\n"


def test_a_users_open_server_streams_are_bounded_and_an_ended_one_gives_its_place_back(agent, settings):
    settings.MCP_STREAM_SECONDS, settings.EVENT_STREAMS_PER_USER = 0, 1
    client, _ = agent
    first = client.get("/v1/mcp", HTTP_ACCEPT="text/event-stream")
    assert first.status_code == 200  # open until read to its end
    refused = client.get("/v1/mcp", HTTP_ACCEPT="text/event-stream")
    assert refused.status_code == 429 and refused.json()["code"] == "too_many_streams"
    assert refused["Retry-After"] == "10"
    assert sse_body(first) == b": stream open\n\n"
    again = client.get("/v1/mcp", HTTP_ACCEPT="text/event-stream")
    assert again.status_code == 200 and sse_body(again) == b": stream open\n\n"


def test_the_account_page_lists_connected_agents_and_disconnects_one(alice, bob, workspace):
    McpTokenFactory(user=alice, raw="mcpa_mine", scopes=["read", "deploy"], workspace=workspace,
                    client=McpClientFactory(name="Desk agent"))
    theirs = McpTokenFactory(user=bob, raw="mcpa_theirs", client=McpClientFactory(name="Bob's agent"))
    browser = Client()
    browser.force_login(alice)
    page = browser.get("/dashboard/account/").content.decode()
    assert "Desk agent" in page and "<code>deploy</code>" in page and "Acme" in page and "Bob&#x27;s agent" not in page
    mine = McpToken.objects.get(user=alice)
    assert browser.post(f"/dashboard/account/agents/{theirs.pk}/disconnect").status_code == 404
    assert browser.post(f"/dashboard/account/agents/{mine.pk}/disconnect").status_code == 302
    assert bearer_client("mcpa_mine").get("/v1/orgs/acme/projects").status_code == 401
    assert bearer_client("mcpa_theirs").get("/v1/orgs/acme/projects").status_code != 401
    assert "No agent is connected." in browser.get("/dashboard/account/").content.decode()


def test_consent_binds_a_workspace_only_through_the_access_check(browser, workspace):
    """Outside the workspace's IP allowlist the consent page refuses to bind it, as REST and pages do."""
    from tests.platform_app.org.factories import IpAllowlistEntryFactory

    client = McpClientFactory()
    IpAllowlistEntryFactory(workspace=workspace, cidr="203.0.113.0/24")
    resp = browser.post("/v1/mcp/authorize", {**authorize_query(client.pk), "decision": "approve",
                                              "granted": ["read"], "workspace": workspace.pk})
    assert resp.status_code == 403 and b"ip_not_allowed" in resp.content
    assert not McpAuthorizationCode.objects.exists()
    other = WorkspaceFactory()  # not a member: 404, nothing granted
    resp = browser.post("/v1/mcp/authorize", {**authorize_query(client.pk), "decision": "approve",
                                              "granted": ["read"], "workspace": other.pk})
    assert resp.status_code == 404 and not McpAuthorizationCode.objects.exists()
