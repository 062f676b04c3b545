"""Routes of the mcp area."""
