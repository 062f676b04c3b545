"""Requests the platform makes to addresses users supply (Git repositories, later webhooks and drains).
`config/outbound.py` applies them; `docs/outbound.md` explains the rules."""
from .core import env

# Plain http besides https. Off in production; `local` and `test` turn it on.
OUTBOUND_ALLOW_HTTP = env.bool("OUTBOUND_ALLOW_HTTP", default=False)
# CIDRs reachable even though private (a self-hosted Git server on the internal network). Metadata
# addresses stay refused whatever this says.
OUTBOUND_ALLOWED_NETWORKS = env.list("OUTBOUND_ALLOWED_NETWORKS", default=[])
# Resolvers asked for outbound names, as ip[:port]; empty = the system's (/etc/resolv.conf).
OUTBOUND_DNS_SERVERS = env.list("OUTBOUND_DNS_SERVERS", default=[])
OUTBOUND_DNS_TIMEOUT_SECONDS = env.float("OUTBOUND_DNS_TIMEOUT_SECONDS", default=3.0)
OUTBOUND_CONNECT_TIMEOUT_SECONDS = env.float("OUTBOUND_CONNECT_TIMEOUT_SECONDS", default=3.0)
# Whole request, redirects included.
OUTBOUND_TIMEOUT_SECONDS = env.float("OUTBOUND_TIMEOUT_SECONDS", default=20.0)
OUTBOUND_MAX_RESPONSE_BYTES = env.int("OUTBOUND_MAX_RESPONSE_BYTES", default=10 * 1024 * 1024)
OUTBOUND_MAX_REDIRECTS = 5
# The PEM bundle TLS is verified against, for requests and git alike (an internal CA: include the public
# ones too if both are needed); empty = the usual public CAs.
OUTBOUND_CA_BUNDLE = env("OUTBOUND_CA_BUNDLE", default="")
