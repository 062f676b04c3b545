"""Celery entry points of buckets (docs/buckets.md)."""
from celery import shared_task

from platform_app.services.resources import buckets


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.buckets.buckets_usage_refresh")
def buckets_usage_refresh() -> int:
    """Beat: count every bucket's objects and bytes."""
    return buckets.buckets_usage_refresh()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.buckets.buckets_reap")
def buckets_reap() -> int:
    """Beat: remove the buckets of deleted projects and those a crash left half made or half deleted."""
    return buckets.buckets_reap()
