"""Code deliveries taken from their table in batches, by a drain job that one wake-up starts for many sends.

A send (or a resend, or the redelivery sweep) writes its delivery with the code sealed in it (`sealed_code`), in
the same statement or transaction as the record, and after the commit calls `deliveries_wake`. The first wake of a
burst raises a flag in the cache and publishes one `deliveries_drain` job; the sends after it find the flag up and
publish nothing, for as long as the drain runs (it keeps the flag up; a drain that died lets it expire). The drain
claims the oldest waiting deliveries a batch at a time (`OTP_DRAIN_BATCH`), which takes their sealed codes out of
the table, and delivers them: sandbox ones written together in one statement, live ones handed to their providers
side by side (`OTP_DRAIN_THREADS`). When nothing is left it lowers the flag and looks once more, for a send that
committed while the flag was still up.

Why not one job per code: publishing a Celery message was the largest part of a send's own CPU, and consuming
it (Celery's bookkeeping around the task) more than the delivery itself (docs/performance.md, "One-time codes").
What a job message gave, the row gives too: a delivery whose wake-up was lost (the broker was down) waits, sealed,
for the beat sweep to wake a drain; a drain that died holding a batch leaves those deliveries queued without a
seal, and the sweep sends them a fresh code (otp_app/services/redelivery.py). Retries and fallbacks still go
as one job each (`delivery_attempt`), with the seal in the message: they are rare and need a countdown.
"""
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.cache_flags import flag_hold, flag_lower, flag_raise
from config.jobs import publish
from config.writes import write_together
from otp_app.models import Delivery
from otp_app.channels.base import ChannelError
from otp_app.services.delivery import (Attempt, deliveries_sent, delivery_follow_up, delivery_message, delivery_refused,
                                       provider_send, sandbox_rows)

logger = logging.getLogger(__name__)

DRAIN_TASK = "otp_app.tasks.deliveries_drain"  # published by name: tasks import services, never the reverse
WAKE_FLAG = "otp:deliveries:wake"


def deliveries_wake(*, drain_seen_at: float | None = None) -> None:
    """Make sure a drain runs soon (after the commit that queued deliveries). A publish the broker refuses leaves
    the deliveries waiting for the beat sweep's wake-up.

    `drain_seen_at`: when the caller saw the wake flag up, before it wrote (a send reads the flag in the round
    trip that counts its rate limits). A drain was then running or about to; it lowers the flag only when it
    finds nothing, and looks once more OTP_DRAIN_WAKE_GRACE_SECONDS after that. So a caller that committed
    within that grace of seeing the flag up is carried by that drain, and needs no round trip of its own."""
    if drain_seen_at is not None and time.monotonic() - drain_seen_at < settings.OTP_DRAIN_WAKE_GRACE_SECONDS:
        return
    if flag_raise(WAKE_FLAG, settings.OTP_DRAIN_WAKE_SECONDS):
        publish(DRAIN_TASK)


def deliveries_drain() -> int:
    """Deliver every waiting delivery, a batch at a time, until none is left; how many were claimed."""
    claimed, limit, linger = 0, settings.OTP_DRAIN_BATCH, settings.OTP_DRAIN_LINGER_SECONDS
    deadline = time.monotonic() + settings.OTP_DRAIN_MAX_SECONDS
    while True:
        # the flag stays up while a drain runs: sends publish no second drain beside this one
        flag_hold(WAKE_FLAG, settings.OTP_DRAIN_WAKE_SECONDS)
        batch = _claim(limit)
        if not batch and linger:
            time.sleep(linger)  # a pause between two sends of a burst is no reason to stop
            batch = _claim(limit)
        if not batch:
            # a send that committed before the flag came down saw it up and published nothing, and one that saw
            # it up before writing may commit up to the grace later (deliveries_wake): look once more after it
            flag_lower(WAKE_FLAG)
            time.sleep(settings.OTP_DRAIN_WAKE_GRACE_SECONDS)
            batch = _claim(limit)
            if not batch:
                return claimed
        claimed += len(batch)
        _deliver(batch)
        if time.monotonic() > deadline:
            # hand over to a successor job, so that a worker asked to stop (a deploy) is not held by a drain that
            # a steady stream of sends would keep going forever; the flag stays up for it
            publish(DRAIN_TASK)
            return claimed
        if len(batch) < limit:
            # a short batch: let the next sends gather for a moment, so that one claim and one write carry them
            time.sleep(linger)


def _claim_sql() -> str:
    q = connection.ops.quote_name
    table, pk, sealed, updated = q(Delivery._meta.db_table), q("id"), q("sealed_code"), q("updated_at")
    # the oldest waiting rows no other drain holds; their seals come back as they leave the table
    return (f"WITH taken AS (SELECT {pk}, {sealed} FROM {table} WHERE {sealed} <> '' ORDER BY {pk} LIMIT %s "
            f"FOR UPDATE SKIP LOCKED) UPDATE {table} SET {sealed} = '', {updated} = %s FROM taken "
            f"WHERE {table}.{pk} = taken.{pk} RETURNING taken.{pk}, taken.{sealed}")


def _claim(limit: int) -> list[tuple[int, str]]:
    """Up to `limit` waiting deliveries, oldest first, as (id, sealed code); drains running at once take
    different ones. The claim is their `updated_at`: the redelivery sweep counts from it."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_claim_sql(), [limit, now])
            return sorted(cursor.fetchall())
    # elsewhere (SQLite: the embedded default) a row is ours if our UPDATE is the one that emptied its seal
    waiting = Delivery.objects.exclude(sealed_code="").order_by("pk").values_list("pk", "sealed_code")[:limit]
    return [(pk, sealed) for pk, sealed in waiting
            if Delivery.objects.filter(pk=pk, sealed_code=sealed).update(sealed_code="", updated_at=now)]


def _deliver(batch: list[tuple[int, str]]) -> None:
    # no ORDER BY (the batch is in claim order already): building it was a tenth of the drain's CPU
    deliveries = Delivery.objects.select_related("record").order_by().in_bulk([pk for pk, _ in batch])
    outbox, updates, live = [], [], []
    for pk, sealed in batch:
        delivery = deliveries.get(pk)
        if delivery is None:
            continue  # its record was deleted meanwhile
        ready = delivery_message(delivery, sealed)
        if isinstance(ready, Attempt):
            _follow_up(ready, delivery, sealed)
        elif delivery.record.mode == "test":
            row, update = sandbox_rows(delivery, ready)
            outbox.append(row)
            updates.append(update)
        else:
            live.append((delivery, ready, sealed))
    if outbox:
        write_together(*outbox, updates=updates)
    if live:
        _deliver_live(live)


def _deliver_live(live: list) -> None:
    """Live deliveries: handed to their providers side by side on threads (they wait on the network), then what
    the providers accepted written in one statement, sent and charged; a refusal is retried or falls back."""
    if len(live) > 1:
        answers = list(_executor.map(_provider_send, live))
    else:
        answers = [_provider_send(live[0])]
    accepted = [(delivery, answer) for (delivery, _, _), answer in zip(live, answers) if isinstance(answer, str)]
    if accepted:
        deliveries_sent(accepted)
    for (delivery, _, sealed), answer in zip(live, answers):
        if isinstance(answer, ChannelError):
            _follow_up(delivery_refused(delivery, answer), delivery, sealed)


def _provider_send(item) -> str | ChannelError | None:
    delivery, message, _ = item
    try:
        return provider_send(delivery, message)
    except Exception:  # noqa: BLE001 - one delivery's bug must not cost the batch; the sweep sends a fresh code
        logger.exception("Delivery %s failed unexpectedly; the redelivery sweep will send a fresh code.", delivery.pk)
        return None


def _follow_up(attempt: Attempt, delivery: Delivery, sealed: str) -> None:
    delivery_follow_up(attempt=attempt, delivery_id=delivery.pk, sealed_code=sealed)


# Threads for live deliveries' provider calls, which wait on the network; one set per process, started as needed.
_executor = ThreadPoolExecutor(max_workers=settings.OTP_DRAIN_THREADS, thread_name_prefix="delivery")
