"""Graduation: a project exported as a signed bundle and redeemed into another workspace, here or on another
instance of the platform (docs/graduation.md)."""
from celery.schedules import crontab

from .core import env

# A redeem code (and its bundle) is valid this long after the export.
GRADUATION_TTL_HOURS = env.int("GRADUATION_TTL_HOURS", default=24)
# A repository the platform hosts travels inside the bundle as a git bundle of at most this many bytes, so a
# bundle posted to another platform stays under the 1 MiB request limit.
GRADUATION_REPOSITORY_MAX_BYTES = env.int("GRADUATION_REPOSITORY_MAX_BYTES", default=512 * 1024)

GRADUATION_BEAT: dict = {
    # Expired exports keep their row (a late redeem is 410) but lose their stored bundle.
    "graduations-purge": {"task": "platform_app.tasks.graduation.graduations_purge", "schedule": crontab(minute=17)},
}
