"""Celery entry points of node agents."""
from celery import shared_task

from platform_app.services.agents import agents as services


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.agents.agents_expire")
def agents_expire() -> int:
    """Beat: nodes that stopped heartbeating go offline and their instances are placed again."""
    return services.agents_expire()
