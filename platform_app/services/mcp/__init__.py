"""Services of the mcp area."""
