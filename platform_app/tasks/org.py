"""Celery entry points of the org area: each task carries the name of the service it calls."""
from celery import shared_task

from platform_app.services.org import growth


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.org.growth_reviews_compute")
def growth_reviews_compute() -> int:
    """Beat, hourly: this week's review to now, and last week's (final once the week is over)."""
    return growth.growth_reviews_compute()
