"""Celery entry points of the tunnel: each task carries the name of the service it calls."""
from celery import shared_task

from platform_app.services.resources import tunnels


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.tunnels.tunnels_prune")
def tunnels_prune() -> dict:
    """Beat: connections whose web process died, relay rows an edge process left behind."""
    return tunnels.tunnels_prune()
