"""Workspace balance: a live delivery holds its price from the moment it is queued; the hold becomes a charge
when the provider accepts the message, and goes back to the balance when the delivery ends without one.

The balance is kept in purses, rows of `Balance` (`OTP_BALANCE_PURSES` per workspace once topped up; a top-up
spreads the balance over them evenly). A hold is one conditional `UPDATE ... SET amount = amount - price` of one
purse that covers the price: the first such purse no other send has locked (`FOR UPDATE SKIP LOCKED`), so sends
running at once take turns on different rows instead of queueing for one, each locked until its send commits.
When every covering purse is locked the send waits for one; when none covers the price alone, the purses are
gathered into the first (all locked at once) and the hold is tried on it. No purse goes below zero, so the
balance never does. The price held is kept on the delivery (`Delivery.reserved`) until it is settled or given
back, each at most once (a conditional update on that field).
"""
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Sum
from django.utils import timezone

from config.errors import ValidationFailed
from config.writes import NothingTaken
from otp_app.models import Balance, Charge, Delivery, SandboxMessage


def balance_for(workspace) -> Balance:
    """The workspace's first purse, which carries its currency (made when missing)."""
    # by id: a Balance made from the object would be cached on it, and a send's workspace is shared (config_cache)
    balance, _ = Balance.objects.get_or_create(workspace_id=workspace.pk, purse=0,
                                               defaults={"currency": settings.OTP_CURRENCY})
    return balance


def balance_amount(workspace_id) -> int:
    """What is left to spend: the sum of the workspace's purses (holds are already off it)."""
    return Balance.objects.filter(workspace_id=workspace_id).aggregate(total=Sum("amount"))["total"] or 0


def balance_top_up(*, workspace, amount: int) -> int:
    """Add `amount` (negative: take it away) to the balance as it is at that moment, with every purse locked, so
    holds taken meanwhile are kept (never a form's stale figure); the new balance, spread evenly over
    OTP_BALANCE_PURSES purses. A change that would take it below zero is refused (ValidationFailed)."""
    currency = balance_for(workspace).currency
    count = max(settings.OTP_BALANCE_PURSES, 1)
    Balance.objects.bulk_create([Balance(workspace_id=workspace.pk, purse=n, currency=currency) for n in range(count)],
                                ignore_conflicts=True)
    with transaction.atomic():
        purses = list(Balance.objects.select_for_update().filter(workspace_id=workspace.pk).order_by("purse"))
        total = sum(p.amount for p in purses) + amount
        if total < 0:
            raise ValidationFailed("The balance cannot go below zero.",
                                   details={"amount": ["More than the balance."]})
        share, rest = divmod(total, count)
        now = timezone.now()
        for p in purses:  # purses beyond OTP_BALANCE_PURSES (it was lowered) are emptied
            p.amount, p.updated_at = (share + (rest if p.purse == 0 else 0) if p.purse < count else 0), now
        Balance.objects.bulk_update(purses, ["amount", "updated_at"])
    return total


def balances_delete(*, workspace_ids) -> None:
    """Delete these workspaces' balances: each is all of its purses."""
    Balance.objects.filter(workspace_id__in=workspace_ids).delete()


def price_of(channel: str) -> int:
    return max(settings.OTP_PRICES.get(channel, 0), 0)


def with_price_held(write, *, workspace_id, price: int):
    """Hold `price` on the balance while `write(take)` writes what holds it, `take` being the hold's UPDATE (for
    `write_together(take=...)`, where it rides in the send's one statement, or None for a free channel). `write`
    raises NothingTaken when the take changed no row; it is tried on a purse no other send holds, then waiting for
    a locked one, then once more after gathering the purses. Returns what `write` returned; NothingTaken when the
    balance does not cover the price."""
    if price <= 0:
        return write(None)
    for step in ("unlocked", "waiting", "gathered"):
        if step == "gathered" and not purses_gather(workspace_id=workspace_id, price=price):
            break
        try:
            return write(_take(workspace_id=workspace_id, price=price, wait=step != "unlocked"))
        except NothingTaken:
            continue
    raise NothingTaken()


def _take(*, workspace_id, price: int, wait: bool) -> tuple[str, list]:
    """The UPDATE (ending in its WHERE) taking `price` off the first purse that covers it: one no other
    transaction has locked, or (`wait`) the first, locked or not."""
    q = connection.ops.quote_name
    table, pk, amount = q(Balance._meta.db_table), q("id"), q("amount")
    lock = (" FOR UPDATE" if wait else " FOR UPDATE SKIP LOCKED") if connection.features.has_select_for_update else ""
    purse = (f"SELECT {pk} FROM {table} WHERE {q('workspace_id')} = %s AND {amount} >= %s "
             f"ORDER BY {q('purse')} LIMIT 1{lock}")
    return (f"UPDATE {table} SET {amount} = {amount} - %s, {q('updated_at')} = %s "
            f"WHERE {pk} = ({purse}) AND {amount} >= %s",
            [price, timezone.now(), workspace_id, price, price])


def purses_gather(*, workspace_id, price: int) -> bool:
    """Move the whole balance into the first purse, if together the purses cover `price` (each alone did not):
    whether they do. Every purse is locked meanwhile."""
    with transaction.atomic():
        purses = list(Balance.objects.select_for_update().filter(workspace_id=workspace_id).order_by("purse"))
        total = sum(p.amount for p in purses)
        if total < price:
            return False
        now = timezone.now()
        Balance.objects.filter(pk=purses[0].pk).update(amount=total, updated_at=now)
        Balance.objects.filter(workspace_id=workspace_id).exclude(pk=purses[0].pk).update(amount=0, updated_at=now)
    return True


def price_hold(*, workspace_id, channel: str) -> int | None:
    """Take a live delivery's price off the balance, if the balance covers it: the amount held (0 for a free
    channel), or None when it does not cover it. Call inside the transaction that writes the delivery."""
    def take_alone(take):
        if take is not None:
            with connection.cursor() as cursor:
                cursor.execute(*take)
                if cursor.rowcount != 1:
                    raise NothingTaken()

    price = price_of(channel)
    try:
        with_price_held(take_alone, workspace_id=workspace_id, price=price)
    except NothingTaken:
        return None
    return price


def hold_release(*, delivery) -> int:
    """Give a delivery's hold back to the balance (it ended without a charge); how much came back. A second
    call, or one for a delivery already charged, gives nothing."""
    held = delivery.reserved
    if held <= 0:
        return 0
    with transaction.atomic():
        if not Delivery.objects.filter(pk=delivery.pk, reserved=held).update(reserved=0):
            return 0
        Balance.objects.filter(workspace_id=delivery.record.workspace_id, purse=0).update(
            amount=F("amount") + held, updated_at=timezone.now())
    delivery.reserved = 0
    return held


def charge_rows(deliveries: list) -> list[Charge]:
    """The unsaved charges settling these live deliveries' holds (the balance lost each price when it was held),
    their `reserved` set to 0 for the caller to save with them; test deliveries have none."""
    live = [d for d in deliveries if d.record.mode == "live"]
    currencies = dict(Balance.objects.filter(workspace_id__in={d.record.workspace_id for d in live}, purse=0)
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
    currency = balance_for(workspace).currency
    return {"currency": currency, "balance": balance_amount(workspace.pk) if api_key.mode == "live" else 0,
            "mode": api_key.mode, "consumption": consumption}
