"""Celery entry points of identity."""
from celery import shared_task

from platform_app.services.identity.throttle import attempt_counters_prune as prune


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.identity.attempt_counters_prune")
def attempt_counters_prune() -> int:
    """Beat: delete sign-in, MFA and preview attempt counters of windows that have ended."""
    return prune()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.identity.device_authorizations_purge")
def device_authorizations_purge() -> int:
    from platform_app.services.identity.device import device_authorizations_purge as purge

    return purge()
