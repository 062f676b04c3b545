"""Celery entry points, one module per domain."""
