"""The MCP endpoint's JSON-RPC: `initialize`, `ping`, `tools/list`, `tools/call` over Streamable HTTP
(docs/mcp.md). The transport (POST, the server-sent stream, `Mcp-Session-Id`) is the view's; this answers one
message for one caller."""
import json

from django.conf import settings
from django.core import signing

from config.errors import ApplicationError
from platform_app.services.mcp.tools import TOOLS, ToolRefused, tool_call

PROTOCOL_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
SERVER = {"name": "platform", "version": "1.0.0"}
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
FORBIDDEN = -32003  # a tool the token's scopes or the member's role do not allow
SESSION_SALT = "mcp-session"


def session_new(user) -> str:
    """A session id the server can check without storing it: signed, naming its user."""
    return signing.dumps({"u": str(user.pk)}, salt=SESSION_SALT, compress=True)


def session_valid(session_id: str, user) -> bool:
    try:
        data = signing.loads(session_id, salt=SESSION_SALT, max_age=settings.MCP_SESSION_MAX_AGE_SECONDS)
    except signing.BadSignature:
        return False
    return data.get("u") == str(user.pk)


def _error(msg_id, code: int, message: str, data=None) -> dict:
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def handle(message, *, user, credential) -> dict | None:
    """The response to one JSON-RPC message (None for a notification)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return _error(message.get("id") if isinstance(message, dict) else None, INVALID_REQUEST,
                      "Not a JSON-RPC 2.0 request.")
    msg_id, method, params = message.get("id"), message["method"], message.get("params") or {}
    if "id" not in message:
        return None  # notifications (initialized, cancelled) need no answer
    if not isinstance(params, dict):
        return _error(msg_id, INVALID_PARAMS, "params must be an object.")
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        return {"jsonrpc": "2.0", "id": msg_id, "result": {
            "protocolVersion": version, "capabilities": {"tools": {"listChanged": False}}, "serverInfo": SERVER,
            "instructions": "The deployment platform: workspaces, projects, deployments, their logs and domains. "
                            "Every tool obeys the scopes of your token and your role in the workspace."}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": msg_id, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": msg_id, "result": {"tools": [t.schema() for t in TOOLS.values()]}}
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return _error(msg_id, INVALID_PARAMS, "tools/call needs a `name` and an `arguments` object.")
        try:
            result = tool_call(user=user, credential=credential, name=name, arguments=arguments)
        except ToolRefused as exc:
            return _error(msg_id, FORBIDDEN, exc.message, exc.data)
        except ApplicationError as exc:  # the service's refusal (404, 400, 409...): a tool error the model reads
            return {"jsonrpc": "2.0", "id": msg_id, "result": {
                "content": [{"type": "text", "text": json.dumps({"code": exc.code, "message": exc.message})}],
                "isError": True}}
        return {"jsonrpc": "2.0", "id": msg_id, "result": {
            "content": [{"type": "text", "text": json.dumps(result, default=str)}], "structuredContent": result,
            "isError": False}}
    return _error(msg_id, METHOD_NOT_FOUND, f"Unknown method {method!r}.")
