"""An AI agent reaches the platform with the official MCP SDK over Streamable HTTP against the live server: it
finds the authorization server from the 401, registers itself, the user consents on the consent page, the SDK
exchanges the code with its PKCE verifier, then the agent lists tools, deploys a starter, follows it to ready
and reads the build log. A user who grants only `read` (and one workspace) gets an agent that is refused the deploying tool."""
import asyncio
import json
import re
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.test import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from mcp.shared.exceptions import MCPError

from platform_app.models import AuditEvent, McpToken
from platform_app.services.identity.keys import sha256_hex

pytestmark = pytest.mark.django_db(transaction=True)


class MemoryStorage:
    def __init__(self):
        self.tokens = self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def consenting_user(user, *, workspace: str = "", grant=None):
    """The user's side of the authorization: opens the page the SDK sends them to, approves, and hands the
    redirect's code back to the SDK (what a browser and a loopback callback do for a desktop agent)."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    seen = {}

    def approve(url: str):
        parts = urlsplit(url)
        page = browser.get(f"{parts.path}?{parts.query}")
        assert page.status_code == 200, page.content[:300]
        html = page.content.decode()
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
        ticked = re.findall(r'name="granted" value="([^"]+)" checked', html)
        answer = browser.post(parts.path, {**fields, "workspace": workspace, "decision": "approve",
                                           "granted": ticked if grant is None else grant})
        assert answer.status_code == 302
        seen["page"], seen["redirect"] = page.content.decode(), parse_qs(urlsplit(answer["Location"]).query)

    async def redirect_handler(url: str):
        await asyncio.to_thread(approve, url)

    async def callback_handler():
        return AuthorizationCodeResult(code=seen["redirect"]["code"][0], state=seen["redirect"]["state"][0])

    return redirect_handler, callback_handler, seen


def agent_session(live_server, user, *, workspace: str = "", grant=None):
    redirect_handler, callback_handler, seen = consenting_user(user, workspace=workspace, grant=grant)
    url, storage = live_server.url + "/v1/mcp", MemoryStorage()
    seen["storage"] = storage
    auth = OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
        client_metadata=OAuthClientMetadata(client_name="Test agent",
                                            redirect_uris=["http://127.0.0.1:33418/callback"]))
    return url, auth, seen


def result_of(call) -> dict:
    assert not call.is_error, call.content[0].text
    return json.loads(call.content[0].text)


def test_an_agent_authorizes_deploys_a_starter_and_reads_its_log(live_server, alice, workspace, as_user):
    created = as_user(alice).post("/v1/orgs/acme/projects/from-template", {"name": "site", "template": "static-site"},
                                  format="json")
    assert created.status_code == 201
    url, auth, seen = agent_session(live_server, alice)

    async def agent():
        async with (httpx2.AsyncClient(auth=auth, timeout=60) as http,
                    streamable_http_client(url, http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            init = await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            workspaces = result_of(await session.call_tool("list_workspaces", {}))
            project = result_of(await session.call_tool("get_project", {"workspace": "acme", "project": "site"}))
            deployed = result_of(await session.call_tool("trigger_deployment",
                                                         {"workspace": "acme", "project": "site"}))
            status = deployed
            for _ in range(120):
                if status["status"] in ("ready", "error", "canceled"):
                    break
                await asyncio.sleep(0.5)
                status = result_of(await session.call_tool("deployment_status",
                                                           {"workspace": "acme", "deployment": deployed["id"]}))
            logs = result_of(await session.call_tool("deployment_logs",
                                                     {"workspace": "acme", "deployment": deployed["id"], "lines": 200}))
            missing = await session.call_tool("get_project", {"workspace": "acme", "project": "nope"})
            return init, tools, workspaces, project, status, logs, missing

    init, tools, workspaces, project, status, logs, missing = asyncio.run(agent())
    assert init.server_info.name == "platform" and init.protocol_version == "2025-11-25"
    assert {"list_workspaces", "trigger_deployment", "deployment_status", "deployment_logs", "rollback",
            "doctor_findings"} <= tools
    # the scopes asked are those the 401 names (what the tools need), each ticked on the consent page
    assert re.findall(r'name="granted" value="([^"]+)"', seen["page"]) == ["read", "deploy"]
    assert "Allow Test agent" in seen["page"]
    assert workspaces["workspaces"] == [{"id": workspace.pk, "slug": "acme", "name": "Acme", "role": "owner"}]
    assert project["slug"] == "site"
    assert status["status"] == "ready", logs["lines"]
    assert logs["lines"] and logs["status"] == "ready"
    assert missing.is_error and json.loads(missing.content[0].text)["code"] == "not_found"
    token = McpToken.objects.get()
    assert token.user == alice and token.scopes == ["read", "deploy"] and token.workspace is None
    held = seen["storage"].tokens.access_token  # what the agent holds; the platform keeps only its hash
    assert held.startswith("mcpa_") and token.access_hash == sha256_hex(held)
    assert AuditEvent.objects.filter(workspace=workspace, action="mcp.tool_called",
                                     data__tool="trigger_deployment").count() == 1


def test_a_read_only_token_bound_to_a_workspace_is_refused_deploying(live_server, alice, workspace, as_user):
    assert as_user(alice).post("/v1/orgs/acme/projects/from-template", {"name": "site", "template": "static-site"},
                               format="json").status_code == 201
    url, auth, _ = agent_session(live_server, alice, workspace="acme", grant=["read"])

    async def agent():
        async with (httpx2.AsyncClient(auth=auth, timeout=60) as http,
                    streamable_http_client(url, http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            listed = result_of(await session.call_tool("list_projects", {"workspace": "acme"}))
            with pytest.raises(MCPError) as refused:
                await session.call_tool("trigger_deployment", {"workspace": "acme", "project": "site"})
            return listed, refused.value

    listed, refused = asyncio.run(agent())
    assert [p["slug"] for p in listed["projects"]] == ["site"]
    assert refused.error.code == -32003 and refused.error.data["requiredScope"] == "deploy"
    token = McpToken.objects.get()
    assert token.scopes == ["read"] and token.workspace == workspace
    from platform_app.models import Deployment

    assert not Deployment.objects.exists()
