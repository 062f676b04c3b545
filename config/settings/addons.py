"""Settings of add-ons (docs/resources.md): the shared servers they are provisioned on."""
from .core import env

# An admin connection to the PostgreSQL cluster that holds add-on databases (a role and a database each); empty:
# the `postgres` add-on is unavailable (409 addon_unavailable).
ADDONS_POSTGRES_URL = env("ADDONS_POSTGRES_URL", default="")
ADDONS_POSTGRES_CONNECTION_LIMIT = env.int("ADDONS_POSTGRES_CONNECTION_LIMIT", default=10)
# An admin connection to the Redis (6 or later: ACL users) that holds add-on key spaces; empty: unavailable.
ADDONS_REDIS_URL = env("ADDONS_REDIS_URL", default="")
# Start of every role, database, ACL user and key prefix add-ons get there (one per platform sharing a server).
ADDONS_NAME_PREFIX = env("ADDONS_NAME_PREFIX", default="addon_")
# A deleted add-on's variables go at once; its database or keys are dropped this long after.
ADDONS_DELETE_GRACE_HOURS = env.float("ADDONS_DELETE_GRACE_HOURS", default=24.0)

ADDONS_BEAT: dict = {
    "addons-purge": {"task": "platform_app.tasks.resources.addons_purge", "schedule": 3600.0},
}
