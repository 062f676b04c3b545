"""One module per domain; each lists its models in `__all__`."""
from .identity import *  # noqa: F401,F403
from .workspaces import *  # noqa: F401,F403
from .tokens import *  # noqa: F401,F403
from .audit import *  # noqa: F401,F403
from .projects import *  # noqa: F401,F403
from .deployments import *  # noqa: F401,F403
from .teams import *  # noqa: F401,F403  invitations
from .git import *  # noqa: F401,F403  provider connections, linked identities
from .env import *  # noqa: F401,F403  environments, env vars, secret findings, preview protection
from .throttle import *  # noqa: F401,F403  attempt counters (sign-in, MFA, preview passwords)
from .domains import *  # noqa: F401,F403  custom domains
from .edge import *  # noqa: F401,F403  firewall rules and events, analytics
from .automation import *  # noqa: F401,F403  cron, log drains, alert rules
from .resources import *  # noqa: F401,F403  add-ons, components, volumes
from .mcp import *  # noqa: F401,F403  the MCP endpoint's OAuth clients, codes, tokens
from .buckets import *  # noqa: F401,F403  object-storage buckets
from .graduation import *  # noqa: F401,F403  project exports and redemptions
from .dedicated_dbs import *  # noqa: F401,F403  dedicated databases and their backups
from .tunnels import *  # noqa: F401,F403  the tunnel, its connections and relay rows
from .staff import *  # noqa: F401,F403  incidents, status probe samples
from .org import *  # noqa: F401,F403  SSO, SCIM, IP allowlist, feedback, growth
from .billing import *  # noqa: F401,F403  price book, usage records, billing accounts, invoices, tax ids
