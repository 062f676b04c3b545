"""Celery entry points of the OTP service: they load ids and call one service."""
from celery import shared_task


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_deliver")
def otp_deliver(delivery_id: int, sealed_code: str) -> str:
    """Deliver one code over one channel; retries transient failures with backoff, then falls back."""
    from otp_app.services.delivery import delivery_attempt

    attempt = delivery_attempt(delivery_id=delivery_id, sealed_code=sealed_code)
    if attempt.outcome == "retry":
        otp_deliver.apply_async((delivery_id, sealed_code), countdown=attempt.countdown)
    elif attempt.outcome == "fallback":
        otp_deliver.delay(attempt.next_delivery.pk, attempt.sealed_code or sealed_code)
    return attempt.outcome


@shared_task(acks_late=True, ignore_result=True, name="otp_app.tasks.otp_expire_sweep")
def otp_expire_sweep() -> int:
    """Beat: mark over-TTL records expired (the API also treats them so before the sweep runs)."""
    from otp_app.services.records import otp_expire_due

    return otp_expire_due()
