"""Cron jobs, log drains and alert rules (docs/automation.md)."""
from celery.schedules import crontab

from .core import env

# Internal routes (`/v1/internal/...`): `Authorization: Bearer <INTERNAL_API_TOKEN>`. Empty: every call is 401.
INTERNAL_API_TOKEN = env("INTERNAL_API_TOKEN", default="")

# Cron ------------------------------------------------------------------------------------------
CRON_MAX_JOBS_PER_PROJECT = env.int("CRON_MAX_JOBS_PER_PROJECT", default=20)
# The shortest gap between two runs a schedule may have (60 = every minute is the most frequent).
CRON_MIN_INTERVAL_SECONDS = env.int("CRON_MIN_INTERVAL_SECONDS", default=60)
CRON_MAX_RETRIES = 3
CRON_RETRY_DELAY_SECONDS = env.float("CRON_RETRY_DELAY_SECONDS", default=10.0)
# A due minute is still run when the tick that sees it comes this late (a restarted beat); older ones are missed.
CRON_MISSED_GRACE_SECONDS = env.int("CRON_MISSED_GRACE_SECONDS", default=120)
CRON_TIMEOUT_SECONDS = env.float("CRON_TIMEOUT_SECONDS", default=60.0)
# A run still `running` after this long is taken as lost (its worker died) and no longer blocks the next one.
CRON_RUN_STALE_SECONDS = env.int("CRON_RUN_STALE_SECONDS", default=900)

# Log drains ------------------------------------------------------------------------------------
DRAINS_MAX_PER_PROJECT = env.int("DRAINS_MAX_PER_PROJECT", default=10)
DRAIN_BATCH_MAX_LINES = env.int("DRAIN_BATCH_MAX_LINES", default=500)
# Fewer lines than a full batch wait at most this long (counted from the oldest pending line).
DRAIN_BATCH_INTERVAL_SECONDS = env.float("DRAIN_BATCH_INTERVAL_SECONDS", default=5.0)
DRAIN_DELIVER_EVERY_SECONDS = env.float("DRAIN_DELIVER_EVERY_SECONDS", default=5.0)
# After a failure the next attempt waits BASE * 2^(failures-1), at most MAX; PAUSE_AFTER failures pause the drain.
DRAIN_BACKOFF_BASE_SECONDS = env.float("DRAIN_BACKOFF_BASE_SECONDS", default=5.0)
DRAIN_BACKOFF_MAX_SECONDS = env.float("DRAIN_BACKOFF_MAX_SECONDS", default=600.0)
DRAIN_PAUSE_AFTER_FAILURES = env.int("DRAIN_PAUSE_AFTER_FAILURES", default=8)
DRAIN_TIMEOUT_SECONDS = env.float("DRAIN_TIMEOUT_SECONDS", default=10.0)
DRAIN_LEASE_SECONDS = 60

# Alerts ----------------------------------------------------------------------------------------
ALERT_RULES_MAX_PER_PROJECT = env.int("ALERT_RULES_MAX_PER_PROJECT", default=50)
ALERT_MAX_WINDOW_MINUTES = 24 * 60
ALERT_WEBHOOK_TIMEOUT_SECONDS = env.float("ALERT_WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# Edge metrics (status, duration of every served request) are counted per project and minute in the cache.
EDGE_METRICS_TTL_SECONDS = ALERT_MAX_WINDOW_MINUTES * 60 + 600
# The edge counts requests in the process and adds them to the cache at most this often (one round trip).
EDGE_METRICS_FLUSH_SECONDS = env.float("EDGE_METRICS_FLUSH_SECONDS", default=1.0)

AUTOMATION_BEAT = {
    "cron-tick": {"task": "platform_app.tasks.automation.cron_tick", "schedule": crontab()},  # each minute, at :00
    "drains-deliver": {"task": "platform_app.tasks.automation.drains_deliver",
                       "schedule": DRAIN_DELIVER_EVERY_SECONDS},
    "alerts-evaluate": {"task": "platform_app.tasks.automation.alerts_evaluate", "schedule": crontab()},
}
