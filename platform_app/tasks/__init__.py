"""Celery entry points, one module per domain."""
from . import deployments  # noqa: F401
