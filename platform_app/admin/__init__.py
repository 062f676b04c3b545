"""Admin registrations, one module per area."""
from . import agents, automation, deployments, domains, edge, env, git, identity, teams  # noqa: F401
from . import resources  # noqa: F401,E402  add-ons, components, volumes
from . import mcp  # noqa: F401,E402  the MCP endpoint's OAuth clients and tokens
from . import buckets, graduation  # noqa: F401
from . import dedicated_dbs  # noqa: F401
from . import tunnels  # noqa: F401
from . import staff  # noqa: F401,E402  incidents, status probes, the index overview
from . import org  # noqa: F401,E402  SSO, SCIM, IP allowlist, feedback, growth
from . import billing  # noqa: F401,E402  price book, usage, accounts, invoices, tax ids, payment events
