"""Settings of the platform's MCP endpoint and its OAuth authorization server (docs/mcp.md)."""
from .core import env

MCP_ACCESS_TTL_SECONDS = env.int("MCP_ACCESS_TTL_SECONDS", default=3600)
MCP_REFRESH_TTL_DAYS = env.int("MCP_REFRESH_TTL_DAYS", default=30)
MCP_CODE_TTL_SECONDS = 600
MCP_SESSION_MAX_AGE_SECONDS = env.int("MCP_SESSION_MAX_AGE_SECONDS", default=24 * 3600)
# A server stream lasts this long; the client opens it again.
MCP_STREAM_SECONDS = env.int("MCP_STREAM_SECONDS", default=300)

# What a client is told to ask for (the 401's `scope`): what the tools need. The user may grant less.
MCP_DEFAULT_SCOPES = "read deploy"

MCP_BEAT: dict = {}
