"""Admin registrations, one module per area."""
from . import agents, deployments, env, git, identity, teams  # noqa: F401
