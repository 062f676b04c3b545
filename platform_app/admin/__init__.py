"""Admin registrations, one module per area."""
from . import agents, automation, deployments, domains, env, git, identity, teams  # noqa: F401
