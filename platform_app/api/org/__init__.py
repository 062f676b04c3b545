"""Routes of the org area."""
