"""MCP server (stdio) for AI agents: the OTP API as tools, through the typed client.

    SVC_API_KEY=svc_test_... SVC_API_URL=http://localhost:8000 .venv/bin/python -m otp_app.mcp_server

Needs no Django: it only speaks HTTP to the API, so an agent's tools behave exactly like the API.
"""
from __future__ import annotations

import dataclasses
import os
from datetime import datetime
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from otp_app.client import AsyncOtpClient, OtpError

Channel = Literal["whatsapp", "sms", "email", "console"]

server = MCPServer(
    name="otp",
    instructions="Send one-time codes to a phone number or email, verify what the recipient typed, resend, "
                 "read a code's state and the account balance. Recipients are E.164 numbers (+4915112345678).",
)


def _plain(value):
    """Dataclasses and datetimes → JSON-ready values."""
    if dataclasses.is_dataclass(value):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return value


def _client() -> AsyncOtpClient:
    key = os.environ.get("SVC_API_KEY", "")
    if not key:
        raise ToolError("SVC_API_KEY is not set: start the server with your svc_live_ or svc_test_ key.")
    return AsyncOtpClient(api_key=key, base_url=os.environ.get("SVC_API_URL", "http://localhost:8000"))


async def _call(method: str, **kwargs) -> dict:
    async with _client() as client:
        try:
            return _plain(await getattr(client, method)(**kwargs))
        except OtpError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc


@server.tool(description="Send a one-time code. Omit channel to let routing pick one.")
async def otp_send(recipient: str, locale: str = "en", channel: Channel | None = None) -> dict:
    return await _call("send", recipient=recipient, locale=locale, channel=channel)


@server.tool(description="Check the code the recipient entered against a record id (otp_...).")
async def otp_verify(id: str, code: str) -> dict:
    return await _call("verify", id=id, code=code)


@server.tool(description="Send a fresh code for a record, optionally over another channel (cooldown applies).")
async def otp_resend(id: str, channel: Channel | None = None) -> dict:
    return await _call("resend", id=id, channel=channel)


@server.tool(description="A code record's delivery and verification state.")
async def otp_status(id: str) -> dict:
    return await _call("status", id=id)


@server.tool(description="The account balance and this month's consumption per channel.")
async def balance_get() -> dict:
    return await _call("balance")


def main() -> None:
    server.run("stdio")


if __name__ == "__main__":
    main()
