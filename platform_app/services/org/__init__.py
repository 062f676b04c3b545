"""Services of the org area."""
