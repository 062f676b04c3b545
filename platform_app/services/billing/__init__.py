"""Services of the billing area."""
