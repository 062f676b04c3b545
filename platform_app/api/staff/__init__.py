"""Routes of the staff area."""
