"""Celery entry points of the OTP service: each loads ids and calls the service it is named after."""
from celery import shared_task

from otp_app.services import delivery, drain, records, redelivery


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.deliveries_drain")
def deliveries_drain() -> int:
    """Deliver every code waiting in the deliveries table, in batches, until none is left."""
    return drain.deliveries_drain()


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.delivery_attempt")
def delivery_attempt(delivery_id: int, sealed_code: str) -> str:
    """Try one delivery again (a retry or a fallback); what follows a failure is decided by the service."""
    attempt = delivery.delivery_attempt(delivery_id=delivery_id, sealed_code=sealed_code)
    delivery.delivery_follow_up(attempt=attempt, delivery_id=delivery_id, sealed_code=sealed_code)
    return attempt.outcome


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.deliveries_redeliver_stale")
def deliveries_redeliver_stale() -> int:
    """Beat: deliveries whose job never reached the broker go out again, with a fresh code."""
    return redelivery.deliveries_redeliver_stale()


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_expire_due")
def otp_expire_due() -> int:
    """Beat: mark over-TTL records expired (the API also treats them so before the sweep runs)."""
    return records.otp_expire_due()


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.idempotency_keys_purge")
def idempotency_keys_purge() -> int:
    """Beat: drop idempotency keys past their 24 h, so a send never spends a statement on it."""
    return records.idempotency_keys_purge()
