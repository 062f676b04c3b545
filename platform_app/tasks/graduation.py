"""Celery entry points of graduation (docs/graduation.md)."""
from celery import shared_task

from platform_app.services.resources import graduation


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.graduation.graduations_purge")
def graduations_purge() -> int:
    """Beat, hourly: empty the stored bundles of expired exports."""
    return graduation.graduations_purge()
