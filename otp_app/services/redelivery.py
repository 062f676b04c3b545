"""Deliveries whose job never reached the broker (it was down when the code was sent) go out again.

The code itself travels only inside the job, sealed, and is stored nowhere else, so a lost job cannot be sent
again as it was: the record gets a fresh code on a new delivery over the same channel, and the stale delivery
is closed as failed, so that a late copy of its job (if it was published after all) is skipped.
"""
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.jobs import enqueue
from otp_app.models import Delivery, OtpRecord
from otp_app.services.codes import code_hash, code_new, code_seal
from otp_app.services.delivery import DELIVER_TASK


def deliveries_redeliver_stale() -> int:
    """Redeliver every delivery still queued OTP_REDELIVER_AFTER_SECONDS after it was made or last retried,
    for a record still waiting for it. Returns how many were sent again."""
    now = timezone.now()
    stale = (Delivery.objects.filter(status=Delivery.Status.QUEUED, record__status=OtpRecord.Status.SENT,
                                     record__expires_at__gt=now,
                                     updated_at__lt=now - timedelta(seconds=settings.OTP_REDELIVER_AFTER_SECONDS))
             .order_by("pk").values_list("pk", flat=True)[:500])
    return sum(_redeliver(delivery_id=pk) for pk in stale)


@transaction.atomic
def _redeliver(*, delivery_id: int) -> bool:
    record_id = Delivery.objects.filter(pk=delivery_id).values_list("record_id", flat=True).first()
    if record_id is None:
        return False
    record = OtpRecord.objects.select_for_update().get(pk=record_id)  # the record first, as delivery_failed does
    delivery = Delivery.objects.select_for_update().get(pk=delivery_id)
    if (delivery.status != Delivery.Status.QUEUED or record.status != OtpRecord.Status.SENT
            or record.sends != delivery.send_number):
        return False
    now = timezone.now()
    delivery.status, delivery.error, delivery.updated_at = (
        Delivery.Status.FAILED, "not handed to the job queue in time; sent again with a fresh code", now)
    delivery.save(update_fields=["status", "error", "updated_at"])
    code = code_new()
    record.code_hash = code_hash(record.pk, code)
    record.save(update_fields=["code_hash"])
    again = Delivery.objects.create(record=record, send_number=delivery.send_number, channel=delivery.channel)
    enqueue(DELIVER_TASK, again.pk, code_seal(code))
    return True
