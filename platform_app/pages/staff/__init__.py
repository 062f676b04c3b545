"""Dashboard pages of the staff area."""
