"""Workspace balance: a live delivery holds its price from the moment it is queued; the hold becomes a charge
when the provider accepts the message, and goes back to the balance when the delivery ends without one.

A hold is one conditional `UPDATE ... SET amount = amount - price WHERE amount >= price`: the row lock makes
concurrent sends take turns, and the balance never goes below zero. The price held is kept on the delivery
(`Delivery.reserved`) until it is settled or given back, each at most once (a conditional update on that field).
"""
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Sum
from django.utils import timezone

from config.errors import ValidationFailed
from otp_app.models import Balance, Charge, Delivery, SandboxMessage


def balance_for(workspace) -> Balance:
    # by id: a Balance made from the object would be cached on it, and a send's workspace is shared (config_cache)
    balance, _ = Balance.objects.get_or_create(workspace_id=workspace.pk, defaults={"currency": settings.OTP_CURRENCY})
    return balance


def balance_top_up(*, workspace, amount: int) -> Balance:
    """Add `amount` (negative: take it away) to the balance in one conditional UPDATE, so holds taken meanwhile are
    kept (never a read-then-write); a change that would take it below zero is refused (ValidationFailed)."""
    balance = balance_for(workspace)
    changed = Balance.objects.filter(pk=balance.pk, amount__gte=-amount).update(
        amount=F("amount") + amount, updated_at=timezone.now())
    if not changed:
        raise ValidationFailed("The balance cannot go below zero.", details={"amount": ["More than the balance."]})
    balance.refresh_from_db()
    return balance


def price_hold(*, workspace_id, channel: str) -> int | None:
    """Take a live delivery's price off the balance, if the balance covers it: the amount held (0 for a free
    channel), or None when it does not cover it. Call inside the transaction that writes the delivery."""
    price, take = price_hold_statement(workspace_id=workspace_id, channel=channel)
    if take is None:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(*take)
        return price if cursor.rowcount == 1 else None


def price_hold_statement(*, workspace_id, channel: str) -> tuple[int, tuple[str, list] | None]:
    """A live send's price and the UPDATE that holds it, for `write_together(take=...)`: the hold then rides in the
    send's one statement and the balance row is locked for that statement only. (0, None) for a free channel."""
    price = settings.OTP_PRICES.get(channel, 0)
    if price <= 0:
        return 0, None
    table = Balance._meta.db_table
    return price, (f'UPDATE "{table}" SET "amount" = "amount" - %s, "updated_at" = %s '
                   f'WHERE "workspace_id" = %s AND "amount" >= %s', [price, timezone.now(), workspace_id, price])


def hold_release(*, delivery) -> int:
    """Give a delivery's hold back to the balance (it ended without a charge); how much came back. A second
    call, or one for a delivery already charged, gives nothing."""
    held = delivery.reserved
    if held <= 0:
        return 0
    with transaction.atomic():
        if not Delivery.objects.filter(pk=delivery.pk, reserved=held).update(reserved=0):
            return 0
        Balance.objects.filter(workspace_id=delivery.record.workspace_id).update(
            amount=F("amount") + held, updated_at=timezone.now())
    delivery.reserved = 0
    return held


def charge_rows(deliveries: list) -> list[Charge]:
    """The unsaved charges settling these live deliveries' holds (the balance lost each price when it was held),
    their `reserved` set to 0 for the caller to save with them; test deliveries have none."""
    live = [d for d in deliveries if d.record.mode == "live"]
    currencies = dict(Balance.objects.filter(workspace_id__in={d.record.workspace_id for d in live})
                      .values_list("workspace_id", "currency")) if live else {}
    charges = []
    for delivery in live:
        charges.append(Charge(workspace_id=delivery.record.workspace_id, delivery=delivery, channel=delivery.channel,
                              amount=delivery.reserved,
                              currency=currencies.get(delivery.record.workspace_id, settings.OTP_CURRENCY)))
        delivery.reserved = 0
    return charges


@transaction.atomic
def delivery_charge(*, delivery) -> Charge | None:
    """Settle an accepted live delivery's hold as its charge; a second call for the same delivery changes
    nothing. The balance already lost the price when the delivery was queued (price_hold)."""
    record = delivery.record
    if record.mode != "live":
        return None
    try:
        with transaction.atomic():
            charge = Charge.objects.create(workspace_id=record.workspace_id, delivery=delivery,
                                           channel=delivery.channel, amount=delivery.reserved,
                                           currency=balance_for(record.workspace).currency)
    except IntegrityError:
        return None  # already charged (a retried task)
    Delivery.objects.filter(pk=delivery.pk).update(reserved=0)
    delivery.reserved = 0
    return charge


def balance_report(*, api_key) -> dict:
    """Balance and this month's per-channel consumption (sandbox messages for a test key)."""
    workspace = api_key.workspace
    month_start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    consumption = {}
    if api_key.mode == "live":
        rows = (Charge.objects.filter(workspace=workspace, created_at__gte=month_start)
                .values("channel").annotate(messages=Count("id"), amount=Sum("amount")))
        consumption = {r["channel"]: {"messages": r["messages"], "amount": r["amount"] or 0} for r in rows}
    else:
        rows = (SandboxMessage.objects.filter(api_key__workspace=workspace, created_at__gte=month_start)
                .values("channel").annotate(messages=Count("id")))
        consumption = {r["channel"]: {"messages": r["messages"], "amount": 0} for r in rows}
    balance = balance_for(workspace)
    return {"currency": balance.currency, "balance": balance.amount if api_key.mode == "live" else 0,
            "mode": api_key.mode, "consumption": consumption}
