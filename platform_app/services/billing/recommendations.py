"""Cost recommendations computed from what the workspace really uses, each with the saving a month (730 hours at
today's price book) it would bring:

- `idle_component`: a running web component whose project received no request at the edge for BILLING_IDLE_DAYS
  days (and that is at least that old). The edge counts requests per project, not per component: a project's
  web components share its count, so one busy web component keeps every other web component of its project off
  this list. Workers and static components serve no requests and are not judged.
- `oversized_instance`: a component whose instances' highest memory peak (reported by their nodes' sandboxes) is
  under BILLING_OVERSIZED_MEMORY_RATIO of its size's memory; the suggestion is the cheapest size holding the peak
  with BILLING_RIGHTSIZE_HEADROOM times room.
- `unvisited_preview`: a ready preview (non-production) deployment older than BILLING_PREVIEW_UNVISITED_DAYS that
  the edge never served, still costing an instance or storage.

Backups past retention and buckets without reads are not judged: this platform has neither yet."""
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Max, Q
from django.utils import timezone

from platform_app.models import Component, Deployment, Instance, UsageRecord
from platform_app.services.billing import meters
from platform_app.services.billing.prices import monthly_amount

LIVE = ("assigned", "starting", "running", "stopping")


@dataclass
class Recommendation:
    kind: str
    project_id: str
    resource: str
    message: str
    saving_monthly: int
    currency: str


def _instance_monthly(size_key: str, count: int, now: datetime) -> int:
    return monthly_amount(meters.instance_meter(size_key), 3600 * count, now=now)


def _money(amount: int) -> str:
    return meters.money(amount, settings.BILLING_CURRENCY)


def _idle_components(workspace, now: datetime) -> list[Recommendation]:
    days = settings.BILLING_IDLE_DAYS
    since = meters.hour_floor(now) - timedelta(days=days)
    components = list(Component.objects.filter(project__workspace=workspace, kind=Component.Kind.WEB,
                                               instances__gt=0, deployment__isnull=False, created_at__lte=since)
                      .select_related("project"))
    if not components:
        return []
    busy = set(UsageRecord.objects.filter(workspace=workspace, meter=meters.EDGE_REQUESTS, hour__gte=since,
                                          quantity__gt=0).values_list("project_ref", flat=True).distinct())
    found = []
    for c in components:
        if c.project_id in busy:
            continue
        saving = _instance_monthly(c.instance_size, c.instances, now)
        found.append(Recommendation(
            "idle_component", c.project_id, c.pk,
            f"The web component {c.name} of {c.project.name} runs {c.instances} × {c.instance_size} but its project "
            f"received no request in {days} days. Scaling it to 0 instances saves {_money(saving)} a month.",
            saving, settings.BILLING_CURRENCY))
    return found


def _sizes_by_price() -> list[tuple[str, dict]]:
    return sorted(settings.INSTANCE_SIZES.items(), key=lambda kv: (kv[1]["price_per_hour"], kv[1]["memory_mb"]))


def _oversized(workspace, now: datetime) -> list[Recommendation]:
    peaks = dict(Instance.objects.filter(component__project__workspace=workspace, status__in=LIVE,
                                         memory_peak_bytes__isnull=False)
                 .values("component").annotate(peak=Max("memory_peak_bytes")).values_list("component", "peak"))
    found = []
    for c in Component.objects.filter(pk__in=list(peaks), instances__gt=0).select_related("project"):
        size = settings.INSTANCE_SIZES.get(c.instance_size)
        if size is None:
            continue
        limit = size["memory_mb"] * 1024 * 1024
        peak = peaks[c.pk]
        if peak >= limit * settings.BILLING_OVERSIZED_MEMORY_RATIO:
            continue
        needed = peak * settings.BILLING_RIGHTSIZE_HEADROOM
        smaller = next((key for key, s in _sizes_by_price() if s["memory_mb"] * 1024 * 1024 >= needed
                        and s["price_per_hour"] < size["price_per_hour"]), None)
        if smaller is None:
            continue
        saving = (_instance_monthly(c.instance_size, c.instances, now)
                  - _instance_monthly(smaller, c.instances, now))
        if saving <= 0:
            continue
        found.append(Recommendation(
            "oversized_instance", c.project_id, c.pk,
            f"The component {c.name} of {c.project.name} is {c.instance_size} ({size['memory_mb']} MB) but its "
            f"instances used at most {peak / 1024 / 1024:.0f} MB. The {smaller} size "
            f"({settings.INSTANCE_SIZES[smaller]['memory_mb']} MB) saves {_money(saving)} a month.",
            saving, settings.BILLING_CURRENCY))
    return found


def _unvisited_previews(workspace, now: datetime) -> list[Recommendation]:
    days = settings.BILLING_PREVIEW_UNVISITED_DAYS
    previews = (Deployment.objects.filter(project__workspace=workspace, status=Deployment.Status.READY,
                                          created_at__lte=now - timedelta(days=days), visit__isnull=True,
                                          component__isnull=True)
                .exclude(env="production").exclude(pk__in=Component.objects.filter(project__workspace=workspace)
                                                   .exclude(deployment=None).values("deployment"))
                .select_related("project")
                .annotate(live=Count("instances", filter=Q(instances__status__in=LIVE,
                                                             instances__component__isnull=True))))
    found = []
    for d in previews:
        if d.project.production_deployment_id == d.pk:
            continue
        live = d.live
        saving = _instance_monthly(settings.INSTANCE_DEFAULT_SIZE_KEY, live, now) if live else 0
        saving += monthly_amount(meters.STORAGE_ARTIFACTS, d.artifact_bytes or 0, now=now)
        if saving <= 0:
            continue
        runs = f"runs {live} instance{'s' if live != 1 else ''} and " if live else ""
        found.append(Recommendation(
            "unvisited_preview", d.project_id, d.pk,
            f"The {d.env} deployment {d.pk} of {d.project.name} (branch {d.branch}) was never visited in the "
            f"{(now - d.created_at).days} days since it was made, yet it {runs}keeps its archive: "
            f"{_money(saving)} a month while it is kept.",
            saving, settings.BILLING_CURRENCY))
    return found


def recommendations_list(*, workspace, now: datetime | None = None) -> list[Recommendation]:
    """Every recommendation, the biggest saving first."""
    now = now or timezone.now()
    found = _idle_components(workspace, now) + _oversized(workspace, now) + _unvisited_previews(workspace, now)
    return sorted(found, key=lambda r: (-r.saving_monthly, r.kind, r.resource))


def savings_total(items: list[Recommendation]) -> int:
    return sum(r.saving_monthly for r in items)

