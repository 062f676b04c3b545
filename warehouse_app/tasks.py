"""Celery entry points of the warehouse service (config/jobs.py enqueues them by name)."""
from celery import shared_task

from warehouse_app.services import region_maps


@shared_task(acks_late=True, ignore_result=True, name="warehouse_app.tasks.region_maps_publish")
def region_maps_publish() -> int:
    """Draw every region's map after a refresh of the directory and share them through the cache."""
    return region_maps.region_maps_publish()
