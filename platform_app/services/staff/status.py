"""What the status page says (read by `/v1/status/...` and the `/status` page alike): each component's state
from its probe's latest samples and the open incidents, each SLO's month so far and its error budget, the hourly
history of an SLO, 90 days of daily bars, and the incidents with their updates."""
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db.models import Prefetch, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from config.errors import NotFound
from platform_app.models import Incident, IncidentUpdate, ProbeHour, ProbeSample

OPERATIONAL, DEGRADED, OUTAGE = "operational", "degraded", "outage"
RANK = {OPERATIONAL: 0, DEGRADED: 1, OUTAGE: 2}
IMPACT_STATE = {"minor": DEGRADED, "major": DEGRADED, "critical": OUTAGE}
RECENTLY_RESOLVED_DAYS = 7  # resolved incidents stay on the page this long


def _worst(states) -> str:
    return max(states, key=RANK.__getitem__, default=OPERATIONAL)


def _percent(good: int, samples: int) -> float | None:
    return round(100 * good / samples, 3) if samples else None


def slo_get(key: str) -> dict:
    slo = settings.STATUS_SLOS.get(key)
    if slo is None:
        raise NotFound("No such SLO.")
    return slo


def month_start(now: datetime) -> datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def slo_month(*, key: str, now: datetime | None = None) -> dict:
    """`current`: the share of good samples this month so far (%, null without samples);
    `errorBudgetRemaining`: the share of this month's budget — (100 − objective) % of its samples so far — not
    spent by bad samples (%: 100 untouched, 0 spent, negative overspent)."""
    slo = slo_get(key)
    now = now or timezone.now()
    totals = ProbeHour.objects.filter(probe=key, hour__gte=month_start(now), hour__lte=now).aggregate(
        samples=Sum("samples"), good=Sum("good"))
    samples, good = totals["samples"] or 0, totals["good"] or 0
    allowed = samples * (100 - slo["objective"]) / 100
    if not samples:
        remaining = 100.0
    elif allowed <= 0:
        remaining = 100.0 if good == samples else 0.0
    else:
        remaining = round(100 * (allowed - (samples - good)) / allowed, 3)
    return {"key": key, "objective": slo["objective"], "current": _percent(good, samples),
            "error_budget_remaining": remaining, "description": slo["description"], "samples": samples,
            "bad": samples - good}


def slo_history(*, key: str, hours: int, now: datetime | None = None) -> dict:
    """One point per hour for the last `hours` hours (the current one last): availability (%) and p95 latency,
    null for an hour without samples."""
    slo_get(key)
    now = now or timezone.now()
    last = now.replace(minute=0, second=0, microsecond=0)
    first = last - timedelta(hours=hours - 1)
    rows = {row.hour: row for row in ProbeHour.objects.filter(probe=key, hour__gte=first, hour__lte=last)}
    points = []
    for n in range(hours):
        at = first + timedelta(hours=n)
        row = rows.get(at)
        points.append({"at": at, "availability": _percent(row.good, row.samples) if row else None,
                       "p95_ms": row.p95_ms if row else None})
    return {"key": key, "hours": hours, "points": points}


def _open_incidents():
    return Incident.objects.exclude(status=Incident.Status.RESOLVED)


def component_states(*, now: datetime | None = None) -> list[dict]:
    """Each component: its probe's samples of the last STATUS_RECENT_MINUTES (all bad: outage, some bad:
    degraded; none: operational) and its open incidents (critical: outage, else degraded), the worse of the two."""
    now = now or timezone.now()
    since = now - timedelta(minutes=settings.STATUS_RECENT_MINUTES)
    probes_of: dict = {}
    for key, slo in settings.STATUS_SLOS.items():
        probes_of.setdefault(slo["component"], []).append(key)
    recent: dict = {}
    for probe, good in ProbeSample.objects.filter(at__gt=since, at__lte=now).values_list("probe", "good"):
        recent.setdefault(probe, []).append(good)
    incidents = list(_open_incidents().values_list("impact", "components"))
    states = []
    for key, name in settings.STATUS_COMPONENTS.items():
        found = []
        for probe in probes_of.get(key, []):
            samples = recent.get(probe, [])
            if samples and not any(samples):
                found.append(OUTAGE)
            elif samples and not all(samples):
                found.append(DEGRADED)
        found += [IMPACT_STATE[impact] for impact, components in incidents if key in (components or [])]
        states.append({"key": key, "name": name, "status": _worst(found)})
    return states


def incidents_shown(*, now: datetime | None = None, days: int = RECENTLY_RESOLVED_DAYS):
    """Open incidents and those resolved in the last `days` days, newest first, with their updates in order."""
    now = now or timezone.now()
    return (Incident.objects.filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=now - timedelta(days=days)))
            .prefetch_related(Prefetch("updates", IncidentUpdate.objects.order_by("created_at", "id")))
            .order_by("-started_at"))


def status_public(*, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    components = component_states(now=now)
    return {"status": _worst(c["status"] for c in components), "components": components,
            "slos": [slo_month(key=key, now=now) for key in settings.STATUS_SLOS],
            "incidents": list(incidents_shown(now=now))}


@dataclass
class Day:
    day: date
    availability: float | None
    incidents: list = field(default_factory=list)

    @property
    def state(self) -> str:
        """The bar's colour: the worst of its incidents' impact and its availability."""
        states = [IMPACT_STATE[i.impact] for i in self.incidents]
        if self.availability is not None and self.availability < 99:
            states.append(OUTAGE if self.availability < 90 else DEGRADED)
        if self.availability is None and not self.incidents:
            return "none"
        return _worst(states)


def status_days(*, now: datetime | None = None, days: int | None = None) -> dict:
    """{component key: [Day, ...]} for the last `days` days (STATUS_HISTORY_DAYS), oldest first: the day's
    availability over the component's probes and the incidents that touched it that day."""
    now = now or timezone.now()
    days = days or settings.STATUS_HISTORY_DAYS
    today = now.date()
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, datetime.min.time(), tzinfo=now.tzinfo)
    component_of = {key: slo["component"] for key, slo in settings.STATUS_SLOS.items()}
    totals: dict = {}
    for row in (ProbeHour.objects.filter(hour__gte=start, hour__lte=now).annotate(day=TruncDate("hour"))
                .values("probe", "day").annotate(samples=Sum("samples"), good=Sum("good"))):
        component = component_of.get(row["probe"])
        if component:
            entry = totals.setdefault((component, row["day"]), [0, 0])
            entry[0] += row["samples"]
            entry[1] += row["good"]
    incidents = list(Incident.objects.filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=start),
                                             started_at__lte=now))
    result = {}
    for key in settings.STATUS_COMPONENTS:
        row = []
        for n in range(days):
            day = first + timedelta(days=n)
            samples, good = totals.get((key, day), (0, 0))
            touching = [i for i in incidents if key in (i.components or [])
                        and i.started_at.date() <= day <= (i.resolved_at or now).date()]
            row.append(Day(day, _percent(good, samples), touching))
        result[key] = row
    return result
