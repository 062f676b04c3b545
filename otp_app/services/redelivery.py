"""Deliveries that nothing is going to carry any more are started again by the beat sweep.

Two ways to get there (otp_app/services/drain.py):
- the wake-up after the commit never reached the broker (it was down): the delivery still holds its sealed code,
  and the sweep wakes a drain, which sends the code the user is waiting for;
- a drain claimed the delivery (its seal left the table) and died before sending it, or a retry's job was lost:
  the code is gone, so the record gets a fresh one on a new delivery over the same channel, and the stale delivery
  is closed as failed, so that a late copy of its job (if it was published after all) is skipped.
"""
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.jobs import publish
from otp_app.models import Delivery, OtpRecord
from otp_app.services.codes import code_hash, code_new, code_seal
from otp_app.services.drain import DRAIN_TASK, deliveries_wake


def deliveries_redeliver_stale() -> int:
    """Wake a drain for deliveries waiting past OTP_DRAIN_WAKE_SECONDS, and redeliver with a fresh code every
    delivery claimed or retried OTP_REDELIVER_AFTER_SECONDS ago and still queued, for a record still waiting for
    it. Returns how many deliveries were started again."""
    now = timezone.now()
    waiting = Delivery.objects.exclude(sealed_code="").filter(
        updated_at__lt=now - timedelta(seconds=settings.OTP_DRAIN_WAKE_SECONDS)).count()
    if waiting:
        publish(DRAIN_TASK)  # past the wake flag: a flag left up by a lost publish must not hold them
    stale = (Delivery.objects.filter(status=Delivery.Status.QUEUED, sealed_code="",
                                     record__status=OtpRecord.Status.SENT, record__expires_at__gt=now,
                                     updated_at__lt=now - timedelta(seconds=settings.OTP_REDELIVER_AFTER_SECONDS))
             .order_by("pk").values_list("pk", flat=True)[:500])
    return waiting + sum(_redeliver(delivery_id=pk) for pk in stale)


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
        Delivery.Status.FAILED, "claimed but never carried; sent again with a fresh code", now)
    delivery.save(update_fields=["status", "error", "updated_at"])
    code = code_new()
    record.code_hash = code_hash(record.pk, code)
    record.save(update_fields=["code_hash"])
    # the hold moves with the code to the new delivery
    Delivery.objects.filter(pk=delivery.pk).update(reserved=0)
    Delivery.objects.create(record=record, send_number=delivery.send_number, channel=delivery.channel,
                            sealed_code=code_seal(code), reserved=delivery.reserved)
    transaction.on_commit(deliveries_wake)
    return True
