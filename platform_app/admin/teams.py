"""Admin of the teams area."""
