"""Admin of the deployments area."""
