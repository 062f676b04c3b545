"""Workspace balance: charge accepted live deliveries once, report consumption."""
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from otp_app.models import Balance, Charge, SandboxMessage


def balance_for(workspace) -> Balance:
    # by id: a Balance made from the object would be cached on it, and a send's workspace is shared (config_cache)
    balance, _ = Balance.objects.get_or_create(workspace_id=workspace.pk, defaults={"currency": settings.OTP_CURRENCY})
    return balance


@transaction.atomic
def balance_top_up(*, workspace, amount: int) -> Balance:
    balance = balance_for(workspace)
    balance = Balance.objects.select_for_update().get(pk=balance.pk)
    balance.amount += amount
    balance.save(update_fields=["amount", "updated_at"])
    return balance


def balance_covers(*, workspace, channel: str) -> bool:
    return balance_for(workspace).amount >= settings.OTP_PRICES.get(channel, 0)


@transaction.atomic
def delivery_charge(*, delivery) -> Charge | None:
    """Charge one accepted live delivery; a second call for the same delivery changes nothing."""
    record = delivery.record
    if record.mode != "live":
        return None
    price = settings.OTP_PRICES.get(delivery.channel, 0)
    balance = Balance.objects.select_for_update().get(pk=balance_for(record.workspace).pk)
    try:
        with transaction.atomic():
            charge = Charge.objects.create(workspace=record.workspace, delivery=delivery, channel=delivery.channel,
                                           amount=price, currency=balance.currency)
    except IntegrityError:
        return None  # already charged (a retried task)
    balance.amount -= price
    balance.save(update_fields=["amount", "updated_at"])
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
