"""Settings of the warehouse_commerce area."""
from .base import env  # noqa: F401
from .celery import CELERY_BEAT_SCHEDULE  # noqa: F401
