"""Settings of dedicated databases (docs/databases.md)."""
from .core import env

# Who makes a project's databases: `postgres` (the platform, on the cluster of DEDICATED_DB_POSTGRES_URL) or
# `external` (an outside provisioner, which calls POST /v1/internal/dedicated-dbs/{dbId}/mark-ready).
DEDICATED_DB_PROVISIONER = env("DEDICATED_DB_PROVISIONER", default="postgres")
# An admin connection to the cluster (a superuser, or a role with CREATEDB and CREATEROLE), over TCP: its host and
# port are also what sandboxes are relayed to. Empty: dedicated databases are not offered (409 addon_unavailable).
DEDICATED_DB_POSTGRES_URL = env("DEDICATED_DB_POSTGRES_URL", default="")
# Every role and database the platform makes starts with this (give each platform sharing a cluster its own);
# the sweep drops names of this shape that no database row holds any more.
DEDICATED_DB_NAME_PREFIX = env("DEDICATED_DB_NAME_PREFIX", default="ddb_")
DEDICATED_DB_CONNECTION_LIMIT = env.int("DEDICATED_DB_CONNECTION_LIMIT", default=20)
DEDICATED_DB_MAX_PER_PROJECT = env.int("DEDICATED_DB_MAX_PER_PROJECT", default=10)
# Where pg_dump and pg_restore are (empty: PATH); they must be at least the cluster's version.
DEDICATED_DB_PG_BIN_DIR = env("DEDICATED_DB_PG_BIN_DIR", default="")
# pg_dump, pg_restore and a template copy are stopped after this long; a worker's claim on a database lasts as long.
DEDICATED_DB_COMMAND_TIMEOUT_SECONDS = env.int("DEDICATED_DB_COMMAND_TIMEOUT_SECONDS", default=3600)
# Backups: a scheduled one every INTERVAL hours per ready database, the newest KEEP scheduled (and MANUAL_KEEP
# manual) ones are kept, older ones deleted with their files.
DEDICATED_DB_BACKUP_INTERVAL_HOURS = env.float("DEDICATED_DB_BACKUP_INTERVAL_HOURS", default=24.0)
DEDICATED_DB_BACKUP_KEEP = env.int("DEDICATED_DB_BACKUP_KEEP", default=7)
DEDICATED_DB_MANUAL_BACKUP_KEEP = env.int("DEDICATED_DB_MANUAL_BACKUP_KEEP", default=10)
# The database a restore replaced is kept this long (or until the next restore), then dropped.
DEDICATED_DB_RESTORE_KEEP_HOURS = env.float("DEDICATED_DB_RESTORE_KEEP_HOURS", default=24.0)
DEDICATED_DB_SWEEP_INTERVAL_SECONDS = env.float("DEDICATED_DB_SWEEP_INTERVAL_SECONDS", default=600.0)

DEDICATED_DBS_BEAT: dict = {
    # schedules backups that are due, drops replaced and orphaned databases, takes up lost jobs
    "dedicated-dbs-sweep": {"task": "platform_app.tasks.dedicated_dbs.dedicated_dbs_sweep",
                            "schedule": DEDICATED_DB_SWEEP_INTERVAL_SECONDS},
}
