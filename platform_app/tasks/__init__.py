"""Celery entry points, one module per domain."""
from . import deployments  # noqa: F401
from . import identity  # noqa: F401
