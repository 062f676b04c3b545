"""Reads the cost API and the Cost page share."""
from datetime import datetime

from django.utils import timezone

from platform_app.services.billing.cost import FORECAST_METHOD, Cost, cost_period


def _period(cost: Cost) -> dict:
    return {"start": cost.start, "end": cost.end}


def cost_overview(*, workspace, now: datetime | None = None) -> dict:
    """This period's cost by category, its forecast, and the previous period's."""
    now = now or timezone.now()
    current = cost_period(workspace=workspace, now=now, detail=False)
    previous = cost_period(workspace=workspace, now=now, previous=True, detail=False)
    return {"period": _period(current), "currency": current.currency, "total": current.total,
            "by_category": current.by_category, "quantities": current.quantities,
            "forecast": current.forecast, "forecast_method": FORECAST_METHOD,
            "measured_until": current.measured_until, "previous_period": _period(previous),
            "previous_total": previous.total, "previous_by_category": previous.by_category}


def cost_per_project(*, workspace, previous: bool = False, now: datetime | None = None) -> tuple[Cost, list[dict]]:
    """The period's cost and its projects, most expensive first (deleted projects keep their name and cost)."""
    cost = cost_period(workspace=workspace, now=now, previous=previous)
    return cost, [{"project_id": p.project_ref, "project_name": p.name, "deleted": not p.exists, "total": p.total,
                   "by_category": p.by_category, "currency": cost.currency} for p in cost.projects]


# Staff reports (/v1/admin/billing/...) -----------------------------------------------------------------------------

def revenue_by_month(*, months: int = 12, now: datetime | None = None) -> dict:
    """Invoiced and paid totals of every workspace per month of the invoices' periods, newest first (minor units;
    void and draft invoices left out)."""
    from collections import defaultdict

    from django.conf import settings

    from platform_app.models import Invoice
    from platform_app.services.billing.meters import period_bounds, previous_period

    now = now or timezone.now()
    start, _ = period_bounds(now)
    periods = [start]
    for _ in range(months - 1):
        periods.append(previous_period(periods[-1])[0])
    rows = (Invoice.objects.filter(period_start__gte=periods[-1]).exclude(status__in=("draft", "void"))
            .values_list("period_start", "status", "total", "currency"))
    totals: dict = defaultdict(lambda: {"invoiced": 0, "paid": 0, "invoices": 0})
    for period_start, status, total, currency in rows:
        if currency.lower() != settings.BILLING_CURRENCY.lower():
            continue
        month = totals[period_bounds(period_start)[0]]
        month["invoiced"] += total
        month["invoices"] += 1
        if status == "paid":
            month["paid"] += total
    return {"currency": settings.BILLING_CURRENCY,
            "months": [{"month": f"{p:%Y-%m}", **totals[p]} for p in periods]}


def revenue_paid_between(start: datetime, end: datetime) -> int:
    """What invoices paid in [start, end) brought in, in minor units of BILLING_CURRENCY (the growth review)."""
    from django.conf import settings
    from django.db.models import Sum

    from platform_app.models import Invoice

    paid = Invoice.objects.filter(status="paid", paid_at__gte=start, paid_at__lt=end,
                                  currency__iexact=settings.BILLING_CURRENCY)
    return paid.aggregate(total=Sum("total"))["total"] or 0


def invoices_all():
    """Every workspace's invoices (staff)."""
    from platform_app.models import Invoice

    return Invoice.objects.select_related("workspace")


def usage_records_all():
    """Every workspace's hourly usage records (staff)."""
    from platform_app.models import UsageRecord

    return UsageRecord.objects.select_related("workspace")
