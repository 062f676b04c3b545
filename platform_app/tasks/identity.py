"""Celery entry points of identity."""
from celery import shared_task


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.identity.attempt_counters_sweep")
def attempt_counters_sweep() -> int:
    """Beat: delete sign-in, MFA and preview attempt counters of windows that have ended."""
    from platform_app.services.throttle import attempt_counters_prune

    return attempt_counters_prune()
