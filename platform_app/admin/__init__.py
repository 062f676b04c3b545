"""Admin registrations, one module per area."""
from . import agents, deployments, domains, env, git, identity, teams  # noqa: F401
