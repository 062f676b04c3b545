"""Carrying a code: one attempt over one channel, retries for transient failures, fallback to the
next channel of the record's route, `undeliverable` when every channel failed."""
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.jobs import publish
from config.writes import write_together
from otp_app import channels, messages
from otp_app.channels.base import ChannelError, Message
from otp_app.models import Delivery, OtpRecord, SandboxMessage
from otp_app.services.balance import charge_rows, delivery_charge, hold_release, price_hold
from otp_app.services.codes import code_hash, code_new, code_seal, code_unseal


DELIVER_TASK = "otp_app.tasks.delivery_attempt"  # enqueued by name: tasks import services, never the reverse


@dataclass
class Attempt:
    outcome: str  # "sent" | "retry" | "fallback" | "undeliverable" | "skipped"
    next_delivery: Delivery | None = None
    countdown: int = 0
    sealed_code: str = ""


def _callback_url(delivery: Delivery) -> str:
    return f"{settings.OTP_PUBLIC_BASE_URL.rstrip('/')}/api/v1/callbacks/twilio"


def _current(delivery: Delivery) -> bool:
    """Whether the delivery still has a code to carry: queued, of the record's latest send, which waits for it."""
    record = delivery.record
    return (delivery.status == Delivery.Status.QUEUED and record.sends == delivery.send_number
            and record.status == OtpRecord.Status.SENT and record.expires_at > timezone.now())


def delivery_attempt(*, delivery_id: int, sealed_code: str) -> Attempt:
    """One try of one delivery (a retry or a fallback, whose job carries the sealed code); safe to run twice (a
    delivery that is no longer queued is skipped)."""
    try:  # get(), not first(): every delivery asks, and first()'s ORDER BY doubled the cost of building the query
        delivery = Delivery.objects.select_related("record").get(pk=delivery_id)
    except Delivery.DoesNotExist:
        return Attempt("skipped")
    ready = delivery_message(delivery, sealed_code)
    if isinstance(ready, Attempt):
        return ready
    if delivery.record.mode == "test":
        outbox, update = sandbox_rows(delivery, ready)
        write_together(outbox, updates=[update])
        return Attempt("sent")
    return delivery_send(delivery, ready)


def delivery_message(delivery: Delivery, sealed_code: str) -> Message | Attempt:
    """The message this try carries, or how the try ends without one: skipped (the delivery is no longer the
    record's current one) or failed (the seal outlived the code)."""
    if not _current(delivery):
        hold_release(delivery=delivery)  # never carried: its price goes back to the balance
        return Attempt("skipped")
    record = delivery.record
    code = code_unseal(sealed_code)
    if code is None:
        return delivery_failed(delivery=delivery, error="the code expired before it could be delivered")
    minutes = max(1, round((record.expires_at - timezone.now()).total_seconds() / 60))
    return Message(recipient=record.recipient, code=code, text=messages.render(record.locale, code, minutes),
                   subject=messages.subject(record.locale), locale=messages.language(record.locale),
                   callback_url=_callback_url(delivery))


def delivery_send(delivery: Delivery, message: Message) -> Attempt:
    """Hand the message to the channel's provider; charge when it accepts."""
    accepted = provider_send(delivery, message)
    if isinstance(accepted, ChannelError):
        return delivery_refused(delivery, accepted)
    deliveries_sent([(delivery, accepted)])
    return Attempt("sent")


def provider_send(delivery: Delivery, message: Message) -> str | ChannelError:
    """The provider's message id, or its refusal. Touches no table: a drain calls it on threads, side by side."""
    try:
        return channels.get(delivery.channel).send(message)
    except ChannelError as exc:
        return exc


def delivery_refused(delivery: Delivery, error: ChannelError) -> Attempt:
    """A provider's refusal: a transient one is tried again later (backoff), any other fails the channel."""
    delivery.tries += 1
    if error.retryable and delivery.tries <= settings.OTP_DELIVERY_RETRIES:
        delivery.error = str(error)[:500]
        delivery.updated_at = timezone.now()
        delivery.save(update_fields=["tries", "error", "updated_at"])
        return Attempt("retry", countdown=2 ** delivery.tries)
    return delivery_failed(delivery=delivery, error=str(error))


def deliveries_sent(accepted: list[tuple[Delivery, str]]) -> None:
    """Deliveries their providers accepted (with the providers' message ids): each marked sent and, when live, its
    hold settled as its charge, all in one statement. Should one have been charged before (a retried job), the
    batch is written a delivery at a time, and that one keeps its one charge."""
    held = {delivery.pk: delivery.reserved for delivery, _ in accepted}
    updates = [(delivery, _mark_sent(delivery, provider_id) + (["reserved"] if delivery.record.mode == "live" else []))
               for delivery, provider_id in accepted]
    charges = charge_rows([delivery for delivery, _ in accepted])
    try:
        with transaction.atomic():
            write_together(*charges, updates=updates)
    except IntegrityError:
        for delivery, fields in updates:
            delivery.reserved = held[delivery.pk]
            with transaction.atomic():
                delivery.save(update_fields=[f for f in fields if f != "reserved"])
                delivery_charge(delivery=delivery)


def _mark_sent(delivery: Delivery, provider_message_id: str) -> list[str]:
    """A try that the provider (or the sandbox) accepted; the fields it changed, for the caller to save."""
    delivery.status = Delivery.Status.SENT
    delivery.provider_message_id = provider_message_id[:100]
    delivery.tries += 1
    delivery.updated_at = timezone.now()
    return ["status", "provider_message_id", "tries", "updated_at"]


def sandbox_rows(delivery: Delivery, message: Message) -> tuple[SandboxMessage, tuple[Delivery, list[str]]]:
    """Test keys: the message lands in the outbox; nothing leaves, nothing is charged. The rows to write: the
    outbox's new one and the delivery's update (a drain writes a whole batch of them in one statement)."""
    record = delivery.record
    outbox = SandboxMessage(api_key_id=record.api_key_id, record=record, channel=delivery.channel,
                            recipient=message.recipient, text=message.text, code=message.code)
    return outbox, (delivery, _mark_sent(delivery, "sandbox"))


@transaction.atomic
def delivery_failed(*, delivery: Delivery, error: str) -> Attempt:
    """Record the failure, give its hold back, and move on to the next channel of the route that the balance
    covers (holding that channel's price), if any."""
    delivery.status = Delivery.Status.FAILED
    delivery.error = error[:500]
    delivery.updated_at = timezone.now()
    delivery.save(update_fields=["status", "error", "updated_at"])
    hold_release(delivery=delivery)
    record = OtpRecord.objects.select_for_update().get(pk=delivery.record_id)
    if record.sends != delivery.send_number or record.status != OtpRecord.Status.SENT:
        return Attempt("skipped")
    tried = set(Delivery.objects.filter(record=record, send_number=delivery.send_number)
                .values_list("channel", flat=True))
    for channel in [c for c in record.route if c not in tried]:
        held = price_hold(workspace_id=record.workspace_id, channel=channel) if record.mode == "live" else 0
        if held is None:  # a failed attempt of its own, so that the record's history says why
            Delivery.objects.create(record=record, send_number=delivery.send_number, channel=channel,
                                    status=Delivery.Status.FAILED, error="the balance does not cover this channel")
            continue
        record.channel = channel
        record.save(update_fields=["channel"])
        nxt = Delivery.objects.create(record=record, send_number=delivery.send_number, channel=channel,
                                      reserved=held)
        return Attempt("fallback", next_delivery=nxt)
    record.status = OtpRecord.Status.UNDELIVERABLE
    record.save(update_fields=["status"])
    return Attempt("undeliverable")


def delivery_status_update(*, provider_message_id: str, provider_status: str) -> Attempt | None:
    """A provider's status callback (Twilio `MessageStatus`)."""
    delivery = Delivery.objects.select_related("record").filter(provider_message_id=provider_message_id).first()
    if delivery is None:
        return None
    if provider_status == "delivered":
        Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.Status.DELIVERED, updated_at=timezone.now())
        return Attempt("sent")
    if provider_status in ("failed", "undelivered") and delivery.status != Delivery.Status.FAILED:
        with transaction.atomic():
            attempt = delivery_failed(delivery=delivery, error=f"provider reported {provider_status}")
            if attempt.outcome == "fallback":
                # the sealed code is gone by now: the next channel carries a fresh one
                code = code_new()
                OtpRecord.objects.filter(pk=delivery.record_id).update(code_hash=code_hash(delivery.record_id, code))
                attempt.sealed_code = code_seal(code)
        return attempt
    return None


def delivery_follow_up(*, attempt: Attempt | None, delivery_id: int | None = None, sealed_code: str = "") -> None:
    """The one place that sends a code again after an attempt or a provider's report: a transient failure
    retries the same delivery with backoff, a failed channel falls back to the next delivery (carrying a fresh
    code when the attempt made one). A publish the broker refuses leaves the delivery queued for
    deliveries_redeliver_stale."""
    if attempt is None:
        return
    if attempt.outcome == "retry":
        publish(DELIVER_TASK, (delivery_id, sealed_code), countdown=attempt.countdown)
    elif attempt.outcome == "fallback":
        publish(DELIVER_TASK, (attempt.next_delivery.pk, attempt.sealed_code or sealed_code))
