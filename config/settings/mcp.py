"""Settings of the mcp area."""
from .core import env  # noqa: F401

MCP_BEAT: dict = {}
