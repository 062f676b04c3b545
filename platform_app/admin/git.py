"""Admin of the git area."""
