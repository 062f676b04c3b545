"""Dashboard pages of the org area."""
