"""Celery entry points of automation (cron, log drains, alerts): each task carries the name of the service it calls."""
from celery import shared_task
from django.conf import settings

from config.jobs import publish
from platform_app.services.automation import alerts, cron, drains


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.automation.cron_tick")
def cron_tick() -> int:
    """Beat, each minute: insert and enqueue the due runs (once per job and minute, whoever else ticks)."""
    return cron.cron_tick()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.automation.cron_run_execute",
             soft_time_limit=settings.CRON_TIMEOUT_SECONDS, time_limit=settings.CRON_TIMEOUT_SECONDS + 30)
def cron_run_execute(run_id: str) -> str | None:
    """One run: a call past CRON_TIMEOUT_SECONDS is interrupted and recorded as failed."""
    return cron.cron_run_execute(run_id=run_id)


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.automation.drains_deliver")
def drains_deliver() -> int:
    """Beat: one delivery task per drain that is due."""
    due = drains.drains_due()
    for drain_id in due:
        publish("platform_app.tasks.automation.drain_deliver", (drain_id,))
    return len(due)


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.automation.drain_deliver")
def drain_deliver(drain_id: str) -> int:
    return drains.drain_deliver(drain_id=drain_id)


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.automation.alerts_evaluate")
def alerts_evaluate() -> int:
    """Beat, each minute: evaluate every alert rule."""
    return alerts.alerts_evaluate()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.automation.alert_notify")
def alert_notify(alert_id: str, kind: str) -> int:
    return len(alerts.alert_notify(alert_id=alert_id, kind=kind))
