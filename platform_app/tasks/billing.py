"""Celery entry points of billing: each task carries the name of the service it calls."""
from celery import shared_task

from platform_app.services.billing import caps, invoices, metering


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.billing.usage_meter")
def usage_meter() -> int:
    """Beat (BILLING_METER_EVERY_SECONDS): record the last finished hours' usage, then send the usage cap notices
    now due."""
    written = metering.usage_meter()
    caps.usage_caps_check()
    return written


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.billing.invoices_build")
def invoices_build() -> int:
    """Beat, hourly: the previous month's usage invoices, made and finalised at the payments provider."""
    return invoices.invoices_build()
