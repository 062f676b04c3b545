"""Admin registrations, one module per area."""
from . import agents, automation, deployments, domains, edge, env, git, identity, teams  # noqa: F401
from . import resources  # noqa: F401,E402  add-ons, components, volumes
from . import org  # noqa: F401,E402  SSO, SCIM, IP allowlist, feedback, growth
