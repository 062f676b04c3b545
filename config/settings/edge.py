"""The edge's firewall and web analytics, and its in-process caches (docs/edge.md)."""
from .core import env  # noqa: F401

# In-process caches (platform_app/services/edge/hostcache.py): how long a host → site answer is kept, how often
# a process reads the shared version key that invalidations bump, and the bytes of pages kept per process.
# The lifetime is a backstop (a change while the shared cache is unreachable): changes invalidate per project. A
# short one made a platform of many hosts miss on most requests (bench/edge.py --hosts: 0.10x of a plain view at 5 s).
# An entry lives between half of it and all of it (config/local_cache.py), so expiries do not come in waves.
EDGE_HOSTS_TTL_SECONDS = env.float("EDGE_HOSTS_TTL_SECONDS", default=120.0)
EDGE_LOCAL_CHECK_SECONDS = env.float("EDGE_LOCAL_CHECK_SECONDS", default=1.0)
EDGE_PAGE_CACHE_BYTES = env.int("EDGE_PAGE_CACHE_BYTES", default=32 * 1024 * 1024)

# Firewall: at most this many rules per project, conditions per rule; events kept this many hours.
FIREWALL_MAX_RULES = env.int("FIREWALL_MAX_RULES", default=100)
FIREWALL_MAX_CONDITIONS = env.int("FIREWALL_MAX_CONDITIONS", default=10)
FIREWALL_EVENT_RETENTION_HOURS = env.int("FIREWALL_EVENT_RETENTION_HOURS", default=7 * 24)
# Events written per (rule, address) and minute; more blocked requests are still blocked, not recorded.
FIREWALL_EVENTS_PER_MINUTE = env.int("FIREWALL_EVENTS_PER_MINUTE", default=60)
# A passed challenge is a signed cookie for this long; challenge answers per address and minute.
FIREWALL_CHALLENGE_SECONDS = env.int("FIREWALL_CHALLENGE_SECONDS", default=3600)
FIREWALL_CHALLENGE_PER_MINUTE = env.int("FIREWALL_CHALLENGE_PER_MINUTE", default=10)

# Web analytics: beacon body size, beacons per address and minute, raw events kept (hours) after roll-up,
# the longest `days` a report covers.
ANALYTICS_BEACON_MAX_BYTES = env.int("ANALYTICS_BEACON_MAX_BYTES", default=2048)
ANALYTICS_BEACONS_PER_MINUTE = env.int("ANALYTICS_BEACONS_PER_MINUTE", default=120)
ANALYTICS_MAX_DAYS = env.int("ANALYTICS_MAX_DAYS", default=90)
ANALYTICS_RETENTION_DAYS = env.int("ANALYTICS_RETENTION_DAYS", default=400)

EDGE_BEAT: dict = {
    "firewall-events-prune": {"task": "platform_app.tasks.edge.firewall_events_prune", "schedule": 600.0},
    "analytics-rollup": {"task": "platform_app.tasks.edge.analytics_rollup", "schedule": 300.0},
}
