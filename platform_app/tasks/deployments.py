"""Celery entry points of deployments."""
from celery import shared_task
from django.conf import settings


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployment_build",
             soft_time_limit=settings.BUILD_TIMEOUT_SECONDS + 60, time_limit=settings.BUILD_TIMEOUT_SECONDS + 120)
def deployment_build(deployment_id: str) -> str:
    """Build one deployment (a second delivery of the same id does nothing) under a lease this process renews,
    so the reaper can tell a build whose worker died."""
    from platform_app.services.builds import deployment_build as build
    from platform_app.services.deployments import deployment_lease

    with deployment_lease(deployment_id=deployment_id):
        return build(deployment_id=deployment_id)


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployment_reap_stuck")
def deployment_reap_stuck() -> int:
    """Beat: end builds a killed worker left `building`."""
    from platform_app.services.deployments import deployments_reap_stuck

    return deployments_reap_stuck()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployment_requeue_stale")
def deployment_requeue_stale() -> int:
    """Beat: enqueue again builds whose job never reached the broker."""
    from platform_app.services.deployments import deployments_requeue_stale

    return deployments_requeue_stale()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.agents_expire")
def agents_expire() -> int:
    """Beat: nodes that stopped heartbeating go offline and their instances are placed again."""
    from platform_app.services.agents import agents_expire as expire

    return expire()
