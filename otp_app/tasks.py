"""Celery entry points of the OTP service: they load ids and call one service."""
from celery import shared_task


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_deliver")
def otp_deliver(delivery_id: int, sealed_code: str) -> str:
    """Deliver one code over one channel; retries transient failures with backoff, then falls back."""
    from otp_app.services.delivery import delivery_attempt, delivery_follow_up

    attempt = delivery_attempt(delivery_id=delivery_id, sealed_code=sealed_code)
    delivery_follow_up(attempt=attempt, delivery_id=delivery_id, sealed_code=sealed_code)
    return attempt.outcome


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_redeliver_stale")
def otp_redeliver_stale() -> int:
    """Beat: deliveries whose job never reached the broker go out again, with a fresh code."""
    from otp_app.services.redelivery import deliveries_redeliver_stale

    return deliveries_redeliver_stale()


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_expire_sweep")
def otp_expire_sweep() -> int:
    """Beat: mark over-TTL records expired (the API also treats them so before the sweep runs)."""
    from otp_app.services.records import otp_expire_due

    return otp_expire_due()


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_idempotency_sweep")
def otp_idempotency_sweep() -> int:
    """Beat: drop idempotency keys past their 24 h, so a send never spends a statement on it."""
    from otp_app.services.records import idempotency_keys_purge

    return idempotency_keys_purge()
