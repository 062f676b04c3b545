"""Admin of the env area."""
