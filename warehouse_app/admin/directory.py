"""Admin of the warehouse directory area."""
