"""Admin of the warehouse commerce area."""
