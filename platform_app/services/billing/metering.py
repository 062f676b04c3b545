"""Metering: what the platform already knows, turned into usage records per workspace, project, hour and meter.

Each finished hour is computed from its sources, never added to:
- build seconds: each deployment's build, `started_at` → `finished_at` (a build still running counts up to now);
- edge requests and bytes: the edge's per-hour counters in the cache, for the projects it served that hour
  (services/automation/edge_metrics.py);
- instance seconds per size: each `Instance` row from `created_at` (placed) to its end: `updated_at` once it is
  stopped, lost or crashed, now while it is live; a component's instance counts as the component's size, any
  other as INSTANCE_DEFAULT_SIZE_KEY (the INSTANCE_* sandbox defaults);
- storage byte-hours: deployment archives (`artifact_bytes`, from the end of their build) and volumes (`size_gb`).
Buckets and database backups do not exist on this platform yet, so they are not metered.

A record is written once per (workspace, project, hour, meter) and only ever raised to the newly computed
quantity, so running an hour again never counts twice, and edge counters that expired (a day) lower nothing.
"""
import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from platform_app.models import Deployment, DeploymentVisit, Instance, Project, UsageRecord, Volume
from platform_app.services.automation import edge_metrics
from platform_app.services.billing import meters
from platform_app.services.billing.prices import prices_seed

logger = logging.getLogger(__name__)

ENDED = ("stopped", "lost", "crashed", "failed")  # an instance's end is its last update
HOUR = timedelta(hours=1)
GIB = 1024 ** 3  # a volume's size_gb is what its disk limit grows by: size_gb × 1024 MB


def _overlap(start: datetime, end: datetime | None, hour: datetime, now: datetime) -> float:
    """Seconds of [start, end) inside [hour, hour + 1 h), counting up to `now` at most."""
    stop = min(end or now, hour + HOUR, now)
    begin = max(start, hour)
    return max(0.0, (stop - begin).total_seconds())


class _Hour:
    """The quantities of one hour, by (workspace, project, meter)."""

    def __init__(self):
        self.quantities: dict = defaultdict(float)
        self.projects: dict = {}  # project id → (workspace id, name)

    def add(self, project, meter: str, quantity: float) -> None:
        if quantity > 0:
            self.projects[project.pk] = (project.workspace_id, project.name)
            self.quantities[(project.workspace_id, project.pk, meter)] += quantity


def _builds(hour: datetime, now: datetime, acc: _Hour) -> None:
    rows = (Deployment.objects.filter(started_at__isnull=False, started_at__lt=hour + HOUR)
            .filter(Q(finished_at__isnull=True) | Q(finished_at__gt=hour)).select_related("project"))
    for d in rows:
        acc.add(d.project, meters.BUILD_SECONDS, _overlap(d.started_at, d.finished_at, hour, now))


def _instances(hour: datetime, now: datetime, acc: _Hour) -> None:
    rows = (Instance.objects.filter(created_at__lt=hour + HOUR)
            .filter(~Q(status__in=ENDED) | Q(updated_at__gt=hour))
            .select_related("deployment__project", "component"))
    for inst in rows:
        end = inst.updated_at if inst.status in ENDED else None
        size = inst.component.instance_size if inst.component_id else settings.INSTANCE_DEFAULT_SIZE_KEY
        acc.add(inst.deployment.project, meters.instance_meter(size), _overlap(inst.created_at, end, hour, now))


def _storage(hour: datetime, now: datetime, acc: _Hour) -> None:
    """Archives kept the whole hour are summed per project by the database (a million deployments are not read
    into this process); those whose build ended within the hour count from then."""
    since = Coalesce("finished_at", "ready_at", "created_at")
    archives = Deployment.objects.filter(artifact_bytes__gt=0, created_at__lt=hour + HOUR).alias(since=since)
    whole = archives.filter(since__lte=hour).values("project_id").annotate(total=Sum("artifact_bytes"))
    totals = {row["project_id"]: row["total"] for row in whole}
    projects = Project.objects.only("pk", "workspace_id", "name").in_bulk(list(totals))
    for pk, total in totals.items():
        acc.add(projects[pk], meters.STORAGE_ARTIFACTS, total * _overlap(hour, None, hour, now) / 3600)
    for d in archives.filter(since__gt=hour).select_related("project"):
        began = d.finished_at or d.ready_at or d.created_at
        acc.add(d.project, meters.STORAGE_ARTIFACTS, d.artifact_bytes * _overlap(began, None, hour, now) / 3600)
    for v in Volume.objects.filter(created_at__lt=hour + HOUR).select_related("component__project"):
        acc.add(v.component.project, meters.STORAGE_VOLUMES, v.size_gb * GIB * _overlap(v.created_at, None, hour, now)
                / 3600)


def _edge(hour: datetime, acc: _Hour) -> None:
    """Only the projects the edge served that hour (edge_metrics names them), however many projects exist."""
    totals = edge_metrics.hour_totals(hour.timestamp())
    projects = Project.objects.only("pk", "workspace_id", "name").in_bulk(list(totals))
    for pk, counts in totals.items():
        if pk in projects:
            acc.add(projects[pk], meters.EDGE_REQUESTS, counts["requests"])
            acc.add(projects[pk], meters.EDGE_BYTES, counts["bytes"])


def _visits(hour: datetime) -> int:
    """Ready previews never visited so far that the edge served this hour get their first visit recorded."""
    unvisited = Deployment.objects.filter(status=Deployment.Status.READY, created_at__lt=hour + HOUR,
                                          visit__isnull=True).exclude(env="production")
    served = edge_metrics.deployments_visited(hour.timestamp())
    seen = list(unvisited.filter(pk__in=list(served)).values_list("pk", flat=True)) if served else []
    for pk in seen:
        DeploymentVisit.objects.get_or_create(deployment_id=pk, defaults={"first_at": hour})
    return len(seen)


def usage_hour_record(*, hour: datetime, now: datetime | None = None) -> int:
    """Write the usage records of one finished hour (UTC, on the hour); the number of records made or raised."""
    now = now or timezone.now()
    hour = meters.hour_floor(hour)
    if hour + HOUR > now:
        raise ValueError(f"The hour {hour:%Y-%m-%d %H}h has not finished.")
    acc = _Hour()
    _builds(hour, now, acc)
    _instances(hour, now, acc)
    _storage(hour, now, acc)
    _edge(hour, acc)
    _visits(hour)
    for attempt in range(2):
        try:
            return _write(hour, acc)
        except IntegrityError:  # another run inserted the same hour meanwhile: read it again and raise
            if attempt:
                raise
    return 0


@transaction.atomic
def _write(hour: datetime, acc: _Hour) -> int:
    existing = {(r.workspace_id, r.project_ref, r.meter): r
                for r in UsageRecord.objects.select_for_update().filter(hour=hour)}
    new, changed = [], 0
    for (workspace_id, project_id, meter), raw in acc.quantities.items():
        quantity = int(round(raw))
        if quantity <= 0:
            continue
        record = existing.get((workspace_id, project_id, meter))
        if record is None:
            new.append(UsageRecord(workspace_id=workspace_id, project_id=project_id, project_ref=project_id,
                                   project_name=acc.projects[project_id][1], hour=hour, meter=meter,
                                   quantity=quantity))
        elif quantity > record.quantity:
            UsageRecord.objects.filter(pk=record.pk).update(quantity=quantity, updated_at=timezone.now())
            changed += 1
    UsageRecord.objects.bulk_create(new)
    return len(new) + changed


def usage_meter(*, now: datetime | None = None) -> int:
    """Beat: seed the price book's new meters, then record the last BILLING_METER_LOOKBACK_HOURS finished hours
    (oldest first); the number of records made or raised."""
    now = now or timezone.now()
    prices_seed()
    last = meters.hour_floor(now) - HOUR
    written = 0
    for back in range(settings.BILLING_METER_LOOKBACK_HOURS - 1, -1, -1):
        written += usage_hour_record(hour=last - back * HOUR, now=now)
    return written
