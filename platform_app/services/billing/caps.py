"""Usage caps: a monthly spend limit per workspace. At 80 % and 100 % of it the owners and billing members are
told (once per period each); from 100 % new deployments and component deploys are refused with 402
`usage_cap_reached` until the cap is raised or the period ends. Running instances keep serving.

`usage_cap_enforce` is called by the deployment trigger service (every trigger path goes through it), inside its
transaction, with the billing account row locked: a cap being changed at the same moment is seen before or after,
never half."""
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ApplicationError, ValidationFailed
from platform_app.models import BillingAccount
from platform_app.services.billing import meters
from platform_app.services.billing.accounts import account_for
from platform_app.services.billing.cost import spend_this_period
from platform_app.services.billing.notices import notice_send
from platform_app.services.teams.audit import audit_record

CAP_MAX = 10 ** 12  # minor units


class UsageCapReached(ApplicationError):
    status, code = 402, "usage_cap_reached"


def _percent(spend: int, cap: int | None) -> float | None:
    if cap is None:
        return None
    if cap == 0:
        return 100.0 if spend == 0 else float("inf")
    return round(100.0 * spend / cap, 2)


def usage_cap_state(*, workspace, account: BillingAccount | None = None, spend: int | None = None,
                    now: datetime | None = None) -> dict:
    """`amount`, `spend_this_period`, `percent_used`, `reached`, `currency`, `period_end`, `message`."""
    now = now or timezone.now()
    if account is None:
        account = BillingAccount.objects.filter(workspace=workspace).first()
    cap = account.usage_cap if account is not None else None
    spend = spend_this_period(workspace=workspace, now=now) if spend is None else spend
    _, end = meters.period_bounds(now)
    reached = cap is not None and spend >= cap
    currency = settings.BILLING_CURRENCY
    if cap is None:
        message = "No usage cap: deployments are never refused for spend."
    elif reached:
        message = (f"The usage cap ({meters.money(cap, currency)}) is reached: this period's spend is "
                   f"{meters.money(spend, currency)}. New deployments are refused until the cap is raised or the "
                   f"period ends ({end:%Y-%m-%d} UTC); running instances keep serving.")
    else:
        message = (f"{meters.money(spend, currency)} of {meters.money(cap, currency)} spent this period; new "
                   f"deployments stop when the spend reaches the cap.")
    percent = _percent(spend, cap)
    return {"amount": cap, "spend_this_period": spend, "percent_used": None if percent == float("inf") else percent,
            "reached": reached, "currency": currency, "period_end": end, "message": message}


@transaction.atomic
def usage_cap_set(*, workspace, amount, actor=None, ip: str = "", now: datetime | None = None) -> dict:
    """Set (or with None remove) the monthly cap. A cap at or below this period's spend is accepted and stops
    deployments at once; the answer says so."""
    if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount <= CAP_MAX):
        raise ValidationFailed(f"amount must be null or a whole number of minor units from 0 to {CAP_MAX}.",
                               details={"amount": [f"null, or 0 to {CAP_MAX} minor units."]})
    account = account_for(workspace=workspace, lock=True)
    account.usage_cap = amount
    account.save(update_fields=["usage_cap", "updated_at"])
    audit_record(workspace=workspace, actor=actor, action="billing.usage_cap_set", target=account,
                 data={"amount": amount}, ip=ip)
    spend = spend_this_period(workspace=workspace, now=now)
    usage_cap_notices(workspace=workspace, account=account, spend=spend, now=now)
    return usage_cap_state(workspace=workspace, account=account, spend=spend, now=now)


def usage_cap_enforce(*, workspace, now: datetime | None = None) -> None:
    """402 `usage_cap_reached` when the workspace's spend this period has reached its cap (call inside the
    deploy's transaction: the account row is locked)."""
    account = BillingAccount.objects.select_for_update().filter(workspace=workspace, usage_cap__isnull=False).first()
    if account is None:
        return
    state = usage_cap_state(workspace=workspace, account=account, now=now)
    if state["reached"]:
        raise UsageCapReached(state["message"], details={
            "usageCap": state["amount"], "spendThisPeriod": state["spend_this_period"], "currency": state["currency"],
            "periodEnd": state["period_end"].isoformat().replace("+00:00", "Z")})


def usage_cap_check(*, workspace) -> None:
    """`usage_cap_enforce` before anything is made for a deploy that follows (the dashboard's new project)."""
    with transaction.atomic():
        usage_cap_enforce(workspace=workspace)


def usage_cap_percent(*, workspace, now: datetime | None = None) -> float | None:
    """Percent of the cap spent this period (None without a cap); what the `usage_cap` alert metric reads."""
    account = BillingAccount.objects.filter(workspace=workspace, usage_cap__isnull=False).first()
    if account is None:
        return None
    percent = _percent(spend_this_period(workspace=workspace, now=now), account.usage_cap)
    return 1000.0 if percent == float("inf") else percent


def usage_cap_notices(*, workspace, account: BillingAccount | None = None, spend: int | None = None,
                      now: datetime | None = None) -> list[int]:
    """Send the 80 % and 100 % notices not yet sent this period (the account row is locked, so one each); the
    percentages notified now."""
    now = now or timezone.now()
    with transaction.atomic():
        account = BillingAccount.objects.select_for_update().get(pk=(account or account_for(workspace=workspace)).pk)
        if account.usage_cap is None:
            return []
        start, end = meters.period_bounds(now)
        spend = spend_this_period(workspace=workspace, now=now) if spend is None else spend
        sent = []
        currency = settings.BILLING_CURRENCY
        for percent in settings.BILLING_CAP_NOTICE_PERCENTS:
            field = f"cap_notice_{percent}_period"
            if spend * 100 < account.usage_cap * percent or getattr(account, field) == start:
                continue
            setattr(account, field, start)
            sent.append(percent)
            if percent >= 100:
                subject = "Usage cap reached: new deployments are paused"
                body = (f"This period's spend ({meters.money(spend, currency)}) has reached the usage cap of "
                        f"{meters.money(account.usage_cap, currency)}. New deployments and component deploys are "
                        f"refused until the cap is raised or the period ends on {end:%Y-%m-%d} (UTC). Running "
                        f"instances keep serving.")
            else:
                subject = f"{percent} % of the usage cap spent"
                body = (f"This period's spend is {meters.money(spend, currency)}, {percent} % or more of the usage "
                        f"cap of {meters.money(account.usage_cap, currency)}. At 100 % new deployments are refused.")
            notice_send(workspace=workspace, subject=subject, body=body)
        if sent:
            account.save(update_fields=[f"cap_notice_{p}_period" for p in sent] + ["updated_at"])
        return sent


def usage_caps_check(*, now: datetime | None = None) -> int:
    """Beat (after metering): the notices due for every workspace with a cap; how many went out."""
    sent = 0
    for account in BillingAccount.objects.filter(usage_cap__isnull=False).select_related("workspace"):
        sent += len(usage_cap_notices(workspace=account.workspace, account=account, now=now))
    return sent
