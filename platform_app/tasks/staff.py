"""Celery entry points of the staff area: the status probes."""
from celery import shared_task

from platform_app.services.staff import probes


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.staff.status_probes_run")
def status_probes_run() -> dict:
    """Beat, each minute: one sample per SLO probe, its hour rolled up, old minute samples pruned."""
    return probes.status_probes_run()
