"""Drive the MCP server with the SDK's own stdio client against the live test server."""
import asyncio
import json
import os
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from otp_app.models import SandboxMessage
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory

RAW = "svc_test_mcp" + "m" * 30
ROOT = Path(__file__).resolve().parents[2]


def _data(result) -> dict:
    if result.structured_content:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def test_agent_sends_reads_sandbox_and_verifies(live_server, transactional_db, workspace):
    ApiKeyFactory(workspace=workspace, mode="test", raw=RAW)
    params = StdioServerParameters(command=sys.executable, args=["-m", "otp_app.mcp_server"], cwd=str(ROOT),
                                   env={**os.environ, "SVC_API_KEY": RAW, "SVC_API_URL": live_server.url})

    async def agent():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"otp_send", "otp_verify", "otp_resend", "otp_status", "balance_get"}
            assert "recipient" in tools["otp_send"].input_schema["properties"]
            sent = _data(await session.call_tool("otp_send", {"recipient": PHONE, "channel": "sms"}))
            code = await asyncio.to_thread(lambda: SandboxMessage.objects.get(record_id=sent["id"]).code)
            wrong = await session.call_tool("otp_verify", {"id": sent["id"], "code": "12x456"})
            verified = _data(await session.call_tool("otp_verify", {"id": sent["id"], "code": code}))
            status = _data(await session.call_tool("otp_status", {"id": sent["id"]}))
            return sent, wrong, verified, status

    sent, wrong, verified, status = asyncio.run(agent())
    assert sent["status"] == "sent" and sent["channel"] == "sms"
    assert wrong.is_error and "invalid_code" in wrong.content[0].text
    assert verified["verified"] is True
    assert status["status"] == "verified"
