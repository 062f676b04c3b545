"""Dashboard pages of the mcp area."""
