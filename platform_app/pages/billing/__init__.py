"""Dashboard pages of the billing area."""
