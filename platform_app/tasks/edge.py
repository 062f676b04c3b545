"""Celery entry points of the edge: each task carries the name of the service it calls."""
from celery import shared_task

from platform_app.services.edge import analytics, firewall


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.edge.firewall_events_prune")
def firewall_events_prune() -> int:
    """Beat: delete firewall events past FIREWALL_EVENT_RETENTION_HOURS."""
    return firewall.firewall_events_prune()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.edge.analytics_rollup")
def analytics_rollup() -> int:
    """Beat: fold the analytics events of finished hours into visitor and vitals rows (and drop rows past
    ANALYTICS_RETENTION_DAYS)."""
    folded = analytics.analytics_rollup()
    analytics.analytics_prune()
    return folded
