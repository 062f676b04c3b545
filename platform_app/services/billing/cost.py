"""What a workspace's usage costs: by category and by project over a billing period (a calendar month, UTC),
priced with the price book, and a forecast to the end of the period. Reads usage records only (no other
service), so the deploy path's cap check can call it."""
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from platform_app.models import Project, UsageRecord
from platform_app.services.billing import meters
from platform_app.services.billing.prices import amount_exact, boundaries, price_at, prices_overlapping

FORECAST_METHOD = ("linear: the cost so far divided by the share of the period measured so far (usage is "
                   "recorded per finished hour)")


def _round(value: Fraction) -> int:
    """Half up, in minor units."""
    return int(value + Fraction(1, 2)) if value >= 0 else -int(-value + Fraction(1, 2))


def _zeros() -> dict:
    return {c: 0 for c in meters.CATEGORIES}


@dataclass
class ProjectCost:
    project_ref: str
    name: str
    exists: bool
    total: int = 0
    by_category: dict = field(default_factory=_zeros)


@dataclass
class Cost:
    start: datetime
    end: datetime
    currency: str
    total: int = 0
    by_category: dict = field(default_factory=_zeros)
    quantities: dict = field(default_factory=lambda: {c: 0.0 for c in meters.CATEGORIES})
    projects: list = field(default_factory=list)  # ProjectCost, most expensive first
    measured_until: datetime | None = None

    @property
    def measured_fraction(self) -> float:
        span = (self.end - self.start).total_seconds()
        if self.measured_until is None or span <= 0:
            return 0.0
        return min(1.0, max(0.0, (self.measured_until - self.start).total_seconds() / span))

    @property
    def forecast(self) -> int:
        """Linear on the measured share of the period (the total itself once the period is over)."""
        fraction = self.measured_fraction
        return self.total if fraction <= 0 or fraction >= 1 else round(self.total / fraction)


def cost_compute(*, workspace, start: datetime, end: datetime, now: datetime | None = None,
                 detail: bool = True) -> Cost:
    """The cost of the workspace's usage records with an hour in [start, end). Exact amounts are summed per
    project and category, each rounded half up; category and workspace totals are sums of those."""
    now = now or timezone.now()
    records = UsageRecord.objects.filter(workspace=workspace, hour__gte=start, hour__lt=end)
    rows = prices_overlapping(start, end)
    exact: dict = defaultdict(Fraction)  # (project_ref, category) → minor units
    quantities: dict = defaultdict(int)  # (category, meter) → base units
    for a, b in boundaries(rows, start, end):
        sums = (records.filter(hour__gte=a, hour__lt=b).values("project_ref", "meter").annotate(q=Sum("quantity"))
                .order_by())
        for row in sums:
            category = meters.category_of(row["meter"])
            exact[(row["project_ref"], category)] += amount_exact(price_at(rows, row["meter"], a), row["q"])
            quantities[(category, row["meter"])] += row["q"]
    cost = Cost(start=start, end=end, currency=settings.BILLING_CURRENCY,
                measured_until=min(meters.hour_floor(now), end) if now > start else start)
    projects: dict = {}
    for (ref, category), value in exact.items():
        amount = _round(value)
        project = projects.setdefault(ref, ProjectCost(project_ref=ref, name="", exists=False))
        project.by_category[category] += amount
        project.total += amount
        cost.by_category[category] += amount
        cost.total += amount
    for (category, _meter), q in quantities.items():
        cost.quantities[category] += q / meters.CATEGORY_UNITS[category][2]
    if detail and projects:  # a project's name now, or the one recorded when it has since been deleted
        for ref, name in records.filter(project_ref__in=list(projects)).values_list("project_ref",
                                                                                    "project_name").distinct():
            projects[ref].name = projects[ref].name or name
        for ref, name in Project.objects.filter(pk__in=list(projects)).values_list("pk", "name"):
            projects[ref].name, projects[ref].exists = name, True
    cost.projects = sorted(projects.values(), key=lambda p: (-p.total, p.name, p.project_ref))
    return cost


def cost_period(*, workspace, now: datetime | None = None, previous: bool = False, detail: bool = True) -> Cost:
    """This period's cost (or the previous one's)."""
    now = now or timezone.now()
    start, end = meters.period_bounds(now)
    if previous:
        start, end = meters.previous_period(start)
    return cost_compute(workspace=workspace, start=start, end=end, now=now, detail=detail)


def spend_this_period(*, workspace, now: datetime | None = None) -> int:
    """What the workspace's usage of this period costs so far (recorded hours), in minor units."""
    return cost_period(workspace=workspace, now=now, detail=False).total
