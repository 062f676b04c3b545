"""Admin registrations, one module per area."""
from . import agents, automation, deployments, domains, edge, env, git, identity, teams  # noqa: F401
from . import tunnels  # noqa: F401
