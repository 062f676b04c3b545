"""The rules of a code's life: send, verify, resend, expire."""
import functools
import hashlib
import json
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config import ratelimit
from config.ratelimit import Limit
from config.writes import NothingTaken, write_together
from otp_app.models import Delivery, IdempotencyKey, OtpRecord
from otp_app.services import balance as balance_services
from otp_app.services.codes import code_hash, code_new, code_seal
from otp_app.services.drain import WAKE_FLAG, deliveries_wake
from otp_app.services.errors import (Conflict, CountryNotAllowed, InsufficientBalance, NoChannel, NotFound, RateLimited,
                                     RecipientNotAllowed, ValidationFailed)
from otp_app.services.routing import recipient_normalize, route_for
from otp_app import messages

Status = OtpRecord.Status


def request_fingerprint(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass
class SendResult:
    record: OtpRecord
    created: bool


def _replay(row: IdempotencyKey, fingerprint: str) -> SendResult:
    if row.request_hash != fingerprint:
        raise Conflict("This idempotency-key was used with a different request body.", code="idempotency_conflict")
    return SendResult(row.record, created=False)


def _idempotency_row(*, api_key, key) -> IdempotencyKey | None:
    """This API key's row for an idempotency-key (at most one: unique), with its record; None without a key. Asked
    only when a send's write found the key taken or the send was refused: never on a send's usual path."""
    if key is None:
        return None
    return IdempotencyKey.objects.select_related("record").filter(api_key=api_key, key=key).first()


def _failed_sql() -> str:
    q = connection.ops.quote_name
    table, recipient, workspace, status, created = (q(n) for n in (
        OtpRecord._meta.db_table, "recipient", "workspace_id", "status", "created_at"))
    # counts no further than the limit: the (recipient, status) index answers it
    return (f"(SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {recipient} = %s AND {workspace} = %s "
            f"AND {status} = %s AND {created} >= %s LIMIT %s) AS failed) < %s")


def _fewer_failed_records(*, workspace_id: str, recipient: str) -> tuple[str, list]:
    """The rule a send's write is conditional on: fewer than OTP_FAILED_RECORDS_PER_RECIPIENT FAILED records of
    this recipient in this workspace created in the last 24 h. Read by the write's own statement, so it costs no
    round trip; written by hand because Django spent four times the statement's own cost compiling it."""
    limit = max(settings.OTP_FAILED_RECORDS_PER_RECIPIENT, 0)
    since = connection.ops.adapt_datetimefield_value(timezone.now() - timedelta(hours=24))
    return _failed_sql(), [recipient, workspace_id, Status.FAILED.value, since, limit, limit]


def _recipient_blocked() -> RateLimited:
    return RateLimited("Too many failed verifications for this recipient; try again tomorrow.",
                       code="recipient_blocked", retry_after=3600)


def _send_limits(*, api_key, recipient: str) -> tuple[list[Limit], float | None]:
    """Count the send against the volume limits, and look at the delivery drain's wake flag in the same round
    trip: the limits counted, and when the flag was seen up (monotonic time, taken before asking) or None."""
    limits = [
        Limit(f"otp:key:{api_key.pk}", settings.OTP_SENDS_PER_KEY_PER_MINUTE, 60,
              "Too many sends with this key; slow down."),
        Limit(f"otp:rcpt:{api_key.workspace_id}:{recipient}", settings.OTP_SENDS_PER_RECIPIENT,
              settings.OTP_SENDS_PER_RECIPIENT_WINDOW, "Too many codes sent to this recipient; try later.",
              {"code": "recipient_rate_limited"}),
    ]
    asked_at = time.monotonic()
    flag_up = ratelimit.consume_all(limits, peek=WAKE_FLAG)
    return limits, asked_at if flag_up else None


def otp_send(*, api_key, recipient: str, locale: str, channel: str | None, idempotency_key=None,
             fingerprint: str = "") -> SendResult:
    """Issue a code and queue its delivery; the HTTP request never waits for a provider.

    An idempotency-key is taken by the statement that writes the record, so a send reads nothing first: a key
    already taken fails that statement, and the send answers with the first record instead, giving back what it
    counted against the volume limits. A refusal (the input, a limit, the balance) also looks for a first answer
    before it is given, so a replay is never refused what its first request was granted."""
    try:
        return _send(api_key=api_key, recipient=recipient, locale=locale, channel=channel,
                     idempotency_key=idempotency_key, fingerprint=fingerprint)
    except (ValidationFailed, CountryNotAllowed, NoChannel, InsufficientBalance, RateLimited, RecipientNotAllowed):
        row = _idempotency_row(api_key=api_key, key=idempotency_key)
        if row is None or _expired(row):
            raise
        return _replay(row, fingerprint)


def _expired(row: IdempotencyKey) -> bool:
    return row.created_at < timezone.now() - timedelta(hours=settings.OTP_IDEMPOTENCY_HOURS)


def _send(*, api_key, recipient, locale, channel, idempotency_key, fingerprint) -> SendResult:
    if not messages.is_known(locale):
        raise ValidationFailed(f"Unknown locale; use one of {', '.join(messages.LOCALES)}.", code="invalid_locale")
    recipient, country = recipient_normalize(recipient, channel, allowed_types=api_key.allowed_number_types)
    route = route_for(workspace=api_key.workspace, mode=api_key.mode, recipient=recipient, country=country,
                      channel=channel)
    limits, drain_seen_at = _send_limits(api_key=api_key, recipient=recipient)
    for _ in range(2):  # a second time only after dropping an expired key
        try:
            try:
                record = _record_create(api_key=api_key, recipient=recipient, locale=locale, route=route,
                                        idempotency_key=idempotency_key, fingerprint=fingerprint,
                                        drain_seen_at=drain_seen_at)
            except InsufficientBalance:
                ratelimit.give_back(limits)  # nothing was sent
                raise
            if record is None:  # the recipient has too many failed codes: nothing was written
                ratelimit.give_back(limits)
                raise _recipient_blocked()
            return SendResult(record, created=True)
        except IntegrityError:
            # the idempotency-key is taken: by an earlier send, or a concurrent one that committed first
            row = _idempotency_row(api_key=api_key, key=idempotency_key)
            if row is None:
                raise  # another constraint: not a race this send can answer
            if not _expired(row):
                ratelimit.give_back(limits)  # a replay is not a send
                return _replay(row, fingerprint)
            # past its 24 h but not swept yet (beat does that): the key is free again
            IdempotencyKey.objects.filter(pk=row.pk).delete()
    raise Conflict("This idempotency-key is being taken by another request; retry.", code="idempotency_conflict")


def _record_create(*, api_key, recipient, locale, route, idempotency_key, fingerprint,
                   drain_seen_at=None) -> OtpRecord | None:
    """The new record, its idempotency key and its delivery, written by one statement unless the recipient has
    too many failed codes (None). `drain_seen_at`: when the drain's wake flag was seen up (deliveries_wake)."""
    now = timezone.now()
    record = OtpRecord(api_key=api_key, workspace=api_key.workspace, mode=api_key.mode, recipient=recipient,
                       locale=locale, channel=route[0], route=route, attempts_left=settings.OTP_MAX_ATTEMPTS,
                       expires_at=now + timedelta(seconds=settings.OTP_CODE_TTL_SECONDS), last_sent_at=now)
    code = code_new()
    record.code_hash = code_hash(record.pk, code)  # the id is drawn at construction, so one INSERT carries both
    rows = [record]
    if idempotency_key is not None:
        rows.append(IdempotencyKey(api_key=api_key, key=idempotency_key, request_hash=fingerprint, record=record))
    delivery = Delivery(record=record, send_number=1, channel=route[0], sealed_code=code_seal(code))
    only_if = _fewer_failed_records(workspace_id=api_key.workspace_id, recipient=recipient)
    if api_key.mode == "live":
        delivery.reserved = balance_services.price_of(route[0])
    try:  # the hold and the rows in one statement, all or none: a key taken meanwhile leaves no hold behind
        written = balance_services.with_price_held(
            lambda take: write_together(*rows, delivery, only_if=only_if, take=take),
            workspace_id=api_key.workspace_id, price=delivery.reserved)
    except NothingTaken:
        raise InsufficientBalance() from None
    if not written:
        return None
    transaction.on_commit(functools.partial(deliveries_wake, drain_seen_at=drain_seen_at))
    return record


def record_get(*, api_key, record_id: str, lock: bool = False) -> OtpRecord:
    qs = OtpRecord.objects.filter(pk=record_id, api_key=api_key)
    record = (qs.select_for_update() if lock else qs).first()
    if record is None:
        raise NotFound("No such code record.")
    return record


def _refusal(record: OtpRecord) -> Conflict | None:
    """Why a record can no longer be verified or resent, if it cannot."""
    if record.status == Status.VERIFIED:
        return Conflict("This code was already verified.", code="otp_already_verified")
    if record.status == Status.FAILED:
        return Conflict("Too many wrong codes; request a new one.", code="otp_attempts_exhausted")
    if record.status == Status.EXPIRED:
        return Conflict("This code has expired; request a new one.", code="otp_expired")
    return None


def _expire_if_due(record: OtpRecord) -> None:
    """Over-TTL counts as expired even if the sweep has not run yet."""
    if record.status in (Status.SENT, Status.UNDELIVERABLE) and record.expires_at <= timezone.now():
        record.status = Status.EXPIRED
        record.save(update_fields=["status"])


def otp_verify(*, api_key, record_id: str, code: str) -> OtpRecord:
    outcome = _attempt(api_key=api_key, record_id=record_id, code=code)
    if outcome is None:
        outcome = _verify_locked(api_key=api_key, record_id=record_id, code=code)
    if isinstance(outcome, Exception):
        raise outcome  # after commit: an expiry or the last wrong attempt is kept
    return outcome


def _verify_sql() -> str:
    q = connection.ops.quote_name
    table, pk, key, status, attempts, hashed, verified, expires = (q(n) for n in (
        OtpRecord._meta.db_table, "id", "api_key_id", "status", "attempts_left", "code_hash", "verified_at",
        "expires_at"))
    # right code: verified; wrong: one attempt less, failed at the last; on the row as the database locks it
    return (f"UPDATE {table} SET "
            f"{status} = CASE WHEN {hashed} = %(hash)s THEN %(verified)s "
            f"WHEN {attempts} <= 1 THEN %(failed)s ELSE {status} END, "
            f"{attempts} = CASE WHEN {hashed} = %(hash)s THEN {attempts} "
            f"WHEN {attempts} > 0 THEN {attempts} - 1 ELSE 0 END, "
            f"{verified} = CASE WHEN {hashed} = %(hash)s THEN %(now)s ELSE {verified} END "
            f"WHERE {pk} = %(id)s AND {key} = %(key)s AND {status} = %(sent)s AND {expires} > %(now)s RETURNING *")


def _attempt(*, api_key, record_id, code) -> OtpRecord | None:
    """The common case in one statement: a sent, unexpired record of this key takes the attempt (verified on the
    right code, one attempt less otherwise, failed at the last) in a single UPDATE, so concurrent attempts queue
    on the row and each sees the one before. Written by hand: the ORM has no UPDATE ... RETURNING, and building
    the statement cost more than running it. None when the record is not a sent, unexpired one of this key: the
    locked path then says why."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    params = {"hash": code_hash(record_id, code), "verified": Status.VERIFIED.value, "failed": Status.FAILED.value,
              "sent": Status.SENT.value, "now": now, "id": record_id, "key": api_key.pk}
    return next(iter(OtpRecord.objects.raw(_verify_sql(), params)), None)


@transaction.atomic
def _verify_locked(*, api_key, record_id, code):
    record = record_get(api_key=api_key, record_id=record_id, lock=True)
    _expire_if_due(record)
    refusal = _refusal(record)
    if refusal is not None:
        return refusal
    if record.status == Status.UNDELIVERABLE:
        return Conflict("The code could not be delivered; resend it.", code="otp_undeliverable")
    return _attempt(api_key=api_key, record_id=record_id, code=code)  # sent again meanwhile (a resend)


def otp_resend(*, api_key, record_id: str, channel: str | None) -> OtpRecord:
    outcome = _resend_locked(api_key=api_key, record_id=record_id, channel=channel)
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


@transaction.atomic
def _resend_locked(*, api_key, record_id, channel):
    """A fresh code replaces the old one and attempts reset; the expiry stays 10 minutes from the
    first send (a new record is the way to get more time)."""
    record = record_get(api_key=api_key, record_id=record_id, lock=True)
    _expire_if_due(record)
    refusal = _refusal(record)
    if refusal is not None:
        return refusal
    now = timezone.now()
    waited = (now - record.last_sent_at).total_seconds()
    if waited < settings.OTP_RESEND_COOLDOWN_SECONDS:
        return RateLimited("Wait before resending.", code="resend_cooldown",
                           retry_after=int(settings.OTP_RESEND_COOLDOWN_SECONDS - waited) + 1)
    if record.sends >= settings.OTP_MAX_SENDS_PER_RECORD:
        return RateLimited("This code was sent too many times; request a new one.", code="resend_limit",
                           retry_after=int((record.expires_at - now).total_seconds()) + 1)
    if channel is not None and channel != record.channel:
        _, country = recipient_normalize(record.recipient, channel, allowed_types=api_key.allowed_number_types)
        route = route_for(workspace=record.workspace, mode=record.mode, recipient=record.recipient,
                          country=country, channel=channel)
    else:
        route = record.route
    # a resend is a send: it counts against the same volume limits, and a live one holds its price
    try:
        limits, drain_seen_at = _send_limits(api_key=api_key, recipient=record.recipient)
    except RateLimited as exc:
        return exc
    held = 0
    if record.mode == "live":
        held = balance_services.price_hold(workspace_id=record.workspace_id, channel=route[0])
        if held is None:
            ratelimit.give_back(limits)
            return InsufficientBalance()
    code = code_new()
    record.code_hash = code_hash(record.pk, code)
    record.attempts_left = settings.OTP_MAX_ATTEMPTS
    record.sends += 1
    record.last_sent_at = now
    record.channel = route[0]
    record.route = route
    record.status = Status.SENT
    record.save()
    Delivery.objects.create(record=record, send_number=record.sends, channel=route[0], sealed_code=code_seal(code),
                            reserved=held)
    transaction.on_commit(functools.partial(deliveries_wake, drain_seen_at=drain_seen_at))
    return record


def otp_expire_due() -> int:
    """Mark every over-TTL record expired."""
    return OtpRecord.objects.filter(status__in=[Status.SENT, Status.UNDELIVERABLE], expires_at__lte=timezone.now()
                                    ).update(status=Status.EXPIRED)


def idempotency_keys_purge() -> int:
    """Drop idempotency keys older than their 24 h (beat; a send also ignores an expired one it meets)."""
    cutoff = timezone.now() - timedelta(hours=settings.OTP_IDEMPOTENCY_HOURS)
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted
