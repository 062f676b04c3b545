"""Settings of the providers area."""
from .base import env  # noqa: F401
from .celery import CELERY_BEAT_SCHEDULE  # noqa: F401

# git-a (GitHub-style) webhooks: x-hub-signature-256 is checked with this secret.
GIT_A_WEBHOOK_SECRET = env("GIT_A_WEBHOOK_SECRET", default="")
