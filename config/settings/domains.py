"""Custom domains: DNS verification targets, re-check schedule, the TLS proxy (Caddy)."""
from .core import env  # noqa: F401

DOMAINS_BEAT: dict = {}
