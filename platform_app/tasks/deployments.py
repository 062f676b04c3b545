"""Celery entry points of deployments: each task carries the name of the service it calls."""
from celery import shared_task
from django.conf import settings

from platform_app.services.deployments import builds
from platform_app.services.deployments import deployments as services


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployment_build",
             soft_time_limit=settings.BUILD_TIMEOUT_SECONDS + 60, time_limit=settings.BUILD_TIMEOUT_SECONDS + 120)
def deployment_build(deployment_id: str) -> str:
    """Build one deployment (a second delivery of the same id does nothing) under a lease this process renews,
    so the reaper can tell a build whose worker died."""
    with services.deployment_lease(deployment_id=deployment_id):
        return builds.deployment_build(deployment_id=deployment_id)


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployments_reap_stuck")
def deployments_reap_stuck() -> int:
    """Beat: end builds a killed worker left `building`."""
    return services.deployments_reap_stuck()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployments_requeue_stale")
def deployments_requeue_stale() -> int:
    """Beat: enqueue again builds whose job never reached the broker."""
    return services.deployments_requeue_stale()
