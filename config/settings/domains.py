"""Custom domains: DNS verification targets, re-check schedule, the TLS proxy (Caddy). docs/domains.md."""
from urllib.parse import urlsplit

from .core import SITE_URL, env
from .deployments import ARTIFACT_ROOT
from .teams import DEPLOY_DOMAIN

# What a domain's DNS must carry to be verified (any one suffices), published at
# /v1/platform/verification-targets and in each domain's `verification` list:
# - TXT `_<DOMAINS_TXT_PREFIX>-challenge.<domain>` = the domain's own token (proves ownership, even before
#   traffic is moved);
# - CNAME (or ALIAS/flattening at the apex) `<domain>` → DOMAINS_CNAME_TARGET;
# - A / AAAA `<domain>` → one of DOMAINS_A_RECORDS / DOMAINS_AAAA_RECORDS (the edge's public addresses).
DOMAINS_TXT_PREFIX = env("DOMAINS_TXT_PREFIX", default="svc")
DOMAINS_CNAME_TARGET = env("DOMAINS_CNAME_TARGET", default=f"cname.{DEPLOY_DOMAIN}").lower().rstrip(".")
DOMAINS_A_RECORDS = env.list("DOMAINS_A_RECORDS", default=[])
DOMAINS_AAAA_RECORDS = env.list("DOMAINS_AAAA_RECORDS", default=[])
# Names no project may add, with all their subdomains: the platform's own (DEPLOY_DOMAIN, SITE_URL's host).
DOMAINS_RESERVED = sorted({DEPLOY_DOMAIN.lower(), (urlsplit(SITE_URL).hostname or "").lower()} - {""})
# The checks ask the resolvers of OUTBOUND_DNS_SERVERS (config/settings/outbound.py; empty = the system's),
# with OUTBOUND_DNS_TIMEOUT_SECONDS per query.

# Re-checks (beat): a pending or misconfigured domain is checked again after DOMAINS_RECHECK_MIN_SECONDS,
# doubling after each miss up to DOMAINS_RECHECK_MAX_SECONDS; a verified one every
# DOMAINS_RECHECK_VERIFIED_SECONDS (a lost record makes it misconfigured). At most DOMAINS_RECHECK_BATCH per sweep.
DOMAINS_RECHECK_INTERVAL_SECONDS = env.float("DOMAINS_RECHECK_INTERVAL_SECONDS", default=60.0)
DOMAINS_RECHECK_MIN_SECONDS = env.int("DOMAINS_RECHECK_MIN_SECONDS", default=60)
DOMAINS_RECHECK_MAX_SECONDS = env.int("DOMAINS_RECHECK_MAX_SECONDS", default=6 * 3600)
DOMAINS_RECHECK_VERIFIED_SECONDS = env.int("DOMAINS_RECHECK_VERIFIED_SECONDS", default=24 * 3600)
DOMAINS_RECHECK_BATCH = env.int("DOMAINS_RECHECK_BATCH", default=100)
# A pending domain is a claim others may race (the first to verify takes the name); one never verified is
# removed after this many days (beat `domains-claims-expire`).
DOMAIN_CLAIM_EXPIRY_DAYS = env.int("DOMAIN_CLAIM_EXPIRY_DAYS", default=7)

# TLS through Caddy (docs/deployment.md, "Caddy"). Empty: no Caddy, the built-in edge serves everything.
# Set: the platform loads its configuration into Caddy's admin API (POST /load) and answers Caddy's on-demand
# TLS `ask` at /internal/caddy/ask, so certificates are issued for verified domains only.
CADDY_ADMIN_URL = env("CADDY_ADMIN_URL", default="").rstrip("/")
# Where Caddy reaches the platform (reverse proxy upstream, host:port) and the ask endpoint.
CADDY_UPSTREAM = env("CADDY_UPSTREAM", default="127.0.0.1:8000")
CADDY_ASK_URL = env("CADDY_ASK_URL", default=f"http://{CADDY_UPSTREAM}/internal/caddy/ask")
CADDY_HTTPS_PORT = env.int("CADDY_HTTPS_PORT", default=443)
CADDY_LISTEN_HOST = env("CADDY_LISTEN_HOST", default="")  # empty: every interface
CADDY_HTTP_PORT = env.int("CADDY_HTTP_PORT", default=80)
# `acme` (public certificates, Let's Encrypt / ZeroSSL) or `internal` (Caddy's own CA: development, tests).
CADDY_TLS_ISSUER = env("CADDY_TLS_ISSUER", default="acme")
CADDY_ACME_EMAIL = env("CADDY_ACME_EMAIL", default="")
# Custom domains serving a plain static site (no firewall rule, no analytics, no redirect or branch) are
# answered by Caddy from the artifact folder, as the edge would (docs/domains.md). Caddy must read ARTIFACT_ROOT,
# at CADDY_ARTIFACT_ROOT as it sees it (the same machine, or the same shared folder).
CADDY_FILE_SERVER = env.bool("CADDY_FILE_SERVER", default=False)
CADDY_ARTIFACT_ROOT = env("CADDY_ARTIFACT_ROOT", default=str(ARTIFACT_ROOT))
# The ask also allows the platform's own names (DOMAINS_RESERVED, `<project>.DEPLOY_DOMAIN` and deployment hosts),
# so one Caddy fronts everything; off when those get a wildcard certificate elsewhere.
CADDY_ASK_PLATFORM_NAMES = env.bool("CADDY_ASK_PLATFORM_NAMES", default=True)
CADDY_TIMEOUT_SECONDS = env.float("CADDY_TIMEOUT_SECONDS", default=5.0)
# The beat pushes the configuration again this often, so a restarted Caddy gets it back.
CADDY_SYNC_INTERVAL_SECONDS = env.float("CADDY_SYNC_INTERVAL_SECONDS", default=300.0)

DOMAINS_BEAT: dict = {
    "domains-recheck": {"task": "platform_app.tasks.domains.domains_recheck",
                        "schedule": DOMAINS_RECHECK_INTERVAL_SECONDS},
    "domains-caddy-sync": {"task": "platform_app.tasks.domains.caddy_sync", "schedule": CADDY_SYNC_INTERVAL_SECONDS},
    "domains-claims-expire": {"task": "platform_app.tasks.domains.domain_claims_expire", "schedule": 3600.0},
}
