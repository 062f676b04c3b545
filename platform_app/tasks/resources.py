"""Celery entry points of the resources area (add-ons, components)."""
from celery import shared_task

from platform_app.services.resources import addons


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.resources.addon_provision")
def addon_provision(addon_id: str) -> str:
    """Make an add-on's database or key space (a second delivery finds it made and does nothing)."""
    return addons.addon_provision(addon_id=addon_id)


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.resources.addons_purge")
def addons_purge() -> int:
    """Beat: drop the data of add-ons deleted longer ago than the grace period."""
    return addons.addons_purge()
