"""Celery entry points of deployments: each task carries the name of the service it calls."""
from celery import shared_task
from django.conf import settings

from platform_app.services.deployments import build_jobs, builds, log_archive
from platform_app.services.deployments import deployments as services


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployment_build",
             soft_time_limit=settings.BUILD_TIMEOUT_SECONDS + 60, time_limit=settings.BUILD_TIMEOUT_SECONDS + 120)
def deployment_build(deployment_id: str) -> str:
    """Prepare the build of one deployment (a second delivery of the same id does nothing) under a lease this
    process renews, so the reaper can tell a build whose worker died; a builder runs it (or, with BUILD_INLINE,
    this process)."""
    with services.deployment_lease(deployment_id=deployment_id):
        job = builds.deployment_build(deployment_id=deployment_id)
        if job is not None and settings.BUILD_INLINE:
            return build_jobs.build_job_run_inline(job=job)
    return "prepared" if job is not None else "skipped"


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployments_reap_stuck")
def deployments_reap_stuck() -> int:
    """Beat: end builds a killed worker or builder left `building`, and those no builder took."""
    released = build_jobs.build_jobs_release()  # first: a job released here is not a dead build
    return released + services.deployments_reap_stuck() + build_jobs.build_jobs_expire()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployments_requeue_stale")
def deployments_requeue_stale() -> int:
    """Beat: enqueue again builds whose job never reached the broker."""
    return services.deployments_requeue_stale()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.deployments.deployment_logs_archive")
def deployment_logs_archive() -> int:
    """Beat: finished builds' logs out of the database into artifact storage, and expired ones deleted."""
    return log_archive.logs_archive_due() + log_archive.logs_expire()
