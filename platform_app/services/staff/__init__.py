"""Services of the staff area."""
