from celery import shared_task

from config.ratelimit import counters_prune as prune


@shared_task(acks_late=True, ignore_result=True, name="config.counters.tasks.counters_prune")
def counters_prune() -> int:
    """Drop the counter rows of ended windows (beat, hourly)."""
    return prune()
