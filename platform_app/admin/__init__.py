"""Admin registrations, one module per area."""
from . import deployments, env, git, identity, teams  # noqa: F401
