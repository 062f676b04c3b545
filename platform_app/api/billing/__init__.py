"""Routes of the billing area."""
