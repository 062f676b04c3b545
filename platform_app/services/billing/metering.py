"""Metering: what the platform already knows, turned into usage records per workspace, project, hour and meter.

Each finished hour is computed from its sources, never added to:
- build seconds: each deployment's build, `started_at` → `finished_at` (a build still running counts up to now);
- edge requests and bytes: the edge's per-hour counters in the cache, for the projects whose counts changed since
  a run last took them, BILLING_METER_EDGE_BATCH a run and hour (services/automation/edge_metrics.py);
- instance seconds per size: each `Instance` row from `created_at` (placed) to its end: `updated_at` once it is
  stopped, lost or crashed, now while it is live; a component's instance counts as the component's size, any
  other as INSTANCE_DEFAULT_SIZE_KEY (the INSTANCE_* sandbox defaults);
- storage byte-hours: deployment archives (`artifact_bytes`, from the end of their build), in batches of projects
  (BILLING_METER_STORAGE_BATCH a run, so a run stays bounded at a million archives) once the hour has been over
  BILLING_METER_SETTLE_SECONDS, and volumes (`size_gb`).
Buckets and database backups do not exist on this platform yet, so they are not metered.

A record is written once per (workspace, project, hour, meter) and only ever raised to the newly computed
quantity, so running an hour again never counts twice, and edge counters that expired (a day) lower nothing.
"""
import json
import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Max, Q
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


ID_BATCH = 10_000  # ids per `IN (...)`: a statement holds at most 65,535 parameters on PostgreSQL


def _batched(ids) -> list:
    ids = list(ids)
    return [ids[i:i + ID_BATCH] for i in range(0, len(ids), ID_BATCH)]


class _Hour:
    """The quantities of one hour, by (workspace, project, meter)."""

    def __init__(self):
        self.quantities: dict = defaultdict(float)
        self.projects: dict = {}  # project id → (workspace id, name)

    def add(self, project: tuple, meter: str, quantity: float) -> None:
        """`project`: (id, workspace id, name), as the readers below select it with their rows."""
        if quantity > 0:
            pk, workspace_id, name = project
            self.projects[pk] = (workspace_id, name)
            self.quantities[(workspace_id, pk, meter)] += quantity


PROJECT = ("project_id", "project__workspace_id", "project__name")  # what a record needs of its project


def _builds(hour: datetime, now: datetime, acc: _Hour) -> None:
    """The builds that ran within the hour: those that ended after it began (the finished_at index), and those
    still running (its NULL entries), so the read is bounded by the hour's builds, not by every deployment."""
    rows = (Deployment.objects.filter(started_at__isnull=False, started_at__lt=hour + HOUR)
            .filter(Q(finished_at__isnull=True) | Q(finished_at__gt=hour))
            .values_list(*PROJECT, "started_at", "finished_at"))
    for *project, started, finished in rows:
        acc.add(project, meters.BUILD_SECONDS, _overlap(started, finished, hour, now))


def _instances(hour: datetime, now: datetime, acc: _Hour) -> None:
    rows = (Instance.objects.filter(created_at__lt=hour + HOUR)
            .filter(~Q(status__in=ENDED) | Q(updated_at__gt=hour))
            .values_list("deployment__project_id", "deployment__project__workspace_id",
                         "deployment__project__name", "component_id", "component__instance_size", "status",
                         "created_at", "updated_at"))
    for *project, component_id, component_size, status, created, updated in rows:
        end = updated if status in ENDED else None
        size = component_size if component_id else settings.INSTANCE_DEFAULT_SIZE_KEY
        acc.add(project, meters.instance_meter(size), _overlap(created, end, hour, now))


def _volumes(hour: datetime, now: datetime, acc: _Hour) -> None:
    volumes = Volume.objects.filter(created_at__lt=hour + HOUR).values_list(
        "component__project_id", "component__project__workspace_id", "component__project__name", "size_gb",
        "created_at")
    for *project, size_gb, created in volumes:
        acc.add(project, meters.STORAGE_VOLUMES, size_gb * GIB * _overlap(created, None, hour, now) / 3600)


_SINCE = 'COALESCE(d."finished_at", d."ready_at", d."created_at")'  # when an archive came to be kept
# the archives kept during the hour `%(end)s` ends, of the projects after `%(after)s`
_ARCHIVES = (f'{{deployments}} d WHERE d."artifact_bytes" > 0 AND d."created_at" < %(end)s AND {_SINCE} < %(end)s '
             f'AND d."project_id" > %(after)s')


def _archives_sql() -> str:
    """The archive byte-hours of the next `%(batch)s` projects after `%(after)s`, written by the database: an
    archive kept the whole hour counts its bytes, one whose build ended within the hour the share it was kept.
    Each project of the batch gets its record, one rounding to 0 too, so the next batch starts after it."""
    deployments, projects = (connection.ops.quote_name(m._meta.db_table) for m in (Deployment, Project))
    if connection.vendor == "postgresql":
        kept = f"GREATEST(0, EXTRACT(EPOCH FROM (%(end)s::timestamptz - {_SINCE})))"
    else:  # SQLite keeps times as ISO text, in UTC
        kept = f"MAX(0, (julianday(%(end)s) - julianday({_SINCE})) * 86400)"
    batch = (f'SELECT d."project_id" AS project_id, SUM(CASE WHEN {_SINCE} <= %(hour)s THEN d."artifact_bytes" * 1.0 '
             f'ELSE d."artifact_bytes" * {kept} / 3600 END) AS byte_hours '
             f'FROM {_ARCHIVES.format(deployments=deployments)} '
             f'GROUP BY d."project_id" ORDER BY d."project_id" LIMIT %(batch)s')
    return (f'{_upsert_head()} SELECT p."workspace_id", p."id", p."id", SUBSTR(p."name", 1, 100), %(hour)s, '
            f'%(meter)s, ROUND(b.byte_hours), %(now)s FROM ({batch}) b JOIN {projects} p ON p."id" = b.project_id '
            f'WHERE b.byte_hours >= 0 {_upsert_tail()}')  # WHERE: SQLite needs one before ON CONFLICT


def _archives_params(hour: datetime, **more) -> dict:
    adapt = connection.ops.adapt_datetimefield_value
    return {"hour": adapt(hour), "end": adapt(hour + HOUR), "after": _archives_metered_until(hour), **more}


def _archives_left(hour: datetime) -> bool:
    """Whether archives kept during the hour remain past the last project it has a record of."""
    table = connection.ops.quote_name(Deployment._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {_ARCHIVES.format(deployments=table)} LIMIT 1", _archives_params(hour))
        return cursor.fetchone() is not None


def _archives_metered_until(hour: datetime) -> str:
    """The last project (in id order) whose archives the hour has a record of; "" before the first batch."""
    return UsageRecord.objects.filter(hour=hour, meter=meters.STORAGE_ARTIFACTS).aggregate(
        last=Max("project_ref"))["last"] or ""


def _archives(hour: datetime, now: datetime) -> int:
    """Deployment archives of the next BILLING_METER_STORAGE_BATCH projects (in id order) after the last one the
    hour has a record of, in one statement: a run writes a bounded share of a million archives' projects, and an
    hour is complete after a few runs. Projects behind the cursor are not read again, so an hour is taken once it
    has been over BILLING_METER_SETTLE_SECONDS, when every build that ended within it has committed. The number
    of records made or raised."""
    params = _archives_params(hour, now=connection.ops.adapt_datetimefield_value(now),
                              batch=settings.BILLING_METER_STORAGE_BATCH, meter=meters.STORAGE_ARTIFACTS)
    with connection.cursor() as cursor:
        cursor.execute(_archives_sql(), params)
        return cursor.rowcount


def _edge_sql() -> str:
    """Requests and bytes records of the projects in a JSON list of {"id", "n", "b"} (requests, bytes), joined with
    their projects in the database (a served project deleted since has none)."""
    projects = connection.ops.quote_name(Project._meta.db_table)
    if connection.vendor == "postgresql":
        served = "json_to_recordset(%(served)s::json) AS e(id text, n bigint, b bigint)"
    else:  # SQLite
        served = ("(SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.n') AS n, "
                  "json_extract(value, '$.b') AS b FROM json_each(%(served)s)) AS e")
    requests, bytes_ = (f'SELECT p."workspace_id" AS w, p."id" AS p, SUBSTR(p."name", 1, 100) AS name, '
                        f'%(meter_{column})s AS m, e.{column} AS q FROM {served} JOIN {projects} p ON p."id" = e.id'
                        for column in ("n", "b"))
    return (f"{_upsert_head()} SELECT w, p, p, name, %(hour)s, m, q, %(now)s FROM "
            f"({requests} UNION ALL {bytes_}) AS records WHERE q > 0 {_upsert_tail()}")


def _edge(hour: datetime, now: datetime) -> int:
    """The next BILLING_METER_EDGE_BATCH projects whose counts of the hour changed since a run took them
    (edge_metrics names them), however many projects exist or were served, in one statement: the records made or
    raised."""
    totals = edge_metrics.hour_totals(hour.timestamp(), limit=settings.BILLING_METER_EDGE_BATCH)
    if not totals:
        return 0
    served = json.dumps([{"id": pk, "n": t["requests"], "b": t["bytes"]} for pk, t in totals.items()])
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(_edge_sql(), {"served": served, "hour": adapt(hour), "now": adapt(now),
                                     "meter_n": meters.EDGE_REQUESTS, "meter_b": meters.EDGE_BYTES})
        return cursor.rowcount


def _visits(hour: datetime) -> int:
    """Ready previews never visited so far that the edge served this hour get their first visit recorded (the next
    BILLING_METER_EDGE_BATCH deployments the edge served, each taken once)."""
    unvisited = Deployment.objects.filter(status=Deployment.Status.READY, created_at__lt=hour + HOUR,
                                          visit__isnull=True).exclude(env="production")
    served = edge_metrics.deployments_visited(hour.timestamp(), limit=settings.BILLING_METER_EDGE_BATCH)
    seen = [pk for ids in _batched(served)
            for pk in unvisited.filter(pk__in=ids).values_list("pk", flat=True)]
    # one statement for the batch; a visit recorded meanwhile (another run) keeps its first hour
    DeploymentVisit.objects.bulk_create([DeploymentVisit(deployment_id=pk, first_at=hour) for pk in seen],
                                        ignore_conflicts=True)
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
    _volumes(hour, now, acc)
    _visits(hour)
    settled = now >= hour + HOUR + timedelta(seconds=settings.BILLING_METER_SETTLE_SECONDS)
    return _write(hour, acc, now) + _edge(hour, now) + (_archives(hour, now) if settled else 0)


UPSERT_ROWS = 2_000  # rows per statement elsewhere: 8 parameters each, under SQLite's 32,766


def _upsert_head() -> str:
    q = connection.ops.quote_name
    columns = ", ".join(q(c) for c in ("workspace_id", "project_id", "project_ref", "project_name", "hour", "meter",
                                       "quantity", "updated_at"))
    return f"INSERT INTO {q(UsageRecord._meta.db_table)} AS r ({columns})"


def _upsert_tail() -> str:
    """Made, or raised when the new quantity is higher: never lowered, never counted twice."""
    q = connection.ops.quote_name
    unique = ", ".join(q(c) for c in ("workspace_id", "project_ref", "hour", "meter"))
    quantity, updated = q("quantity"), q("updated_at")
    return (f"ON CONFLICT ({unique}) DO UPDATE SET {quantity} = excluded.{quantity}, {updated} = excluded.{updated} "
            f"WHERE r.{quantity} < excluded.{quantity}")


def _upsert_sql(rows: int) -> str:
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s)"] * rows)
    return f"{_upsert_head()} VALUES {values} {_upsert_tail()}"


def _upsert_arrays_sql() -> str:
    """PostgreSQL: every record of the hour in one statement, its columns as five arrays: a few parameters instead
    of eight a record, which psycopg spent more time splitting and binding than the database took to write them."""
    return (f"{_upsert_head()} SELECT w, p, p, n, %s, m, q, %s "
            f"FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[]) AS u(w, p, n, m, q) "
            f"{_upsert_tail()}")


def _write(hour: datetime, acc: _Hour, now: datetime) -> int:
    """The hour's records: made or raised in one statement (PostgreSQL) or one per UPSERT_ROWS records, so
    concurrent runs need no lock or retry."""
    at, stamp = (connection.ops.adapt_datetimefield_value(t) for t in (hour, now))
    rows = [(workspace_id, project_id, acc.projects[project_id][1][:100], meter, quantity)
            for (workspace_id, project_id, meter), raw in acc.quantities.items() if (quantity := int(round(raw))) > 0]
    if not rows:
        return 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_upsert_arrays_sql(), [at, stamp, *map(list, zip(*rows))])
            return cursor.rowcount
        written = 0
        for i in range(0, len(rows), UPSERT_ROWS):
            chunk = rows[i:i + UPSERT_ROWS]
            cursor.execute(_upsert_sql(len(chunk)), [value for w, p, n, m, q in chunk
                                                     for value in (w, p, p, n, at, m, q, stamp)])
            written += cursor.rowcount
        return written


def usage_meter(*, now: datetime | None = None) -> int:
    """Beat: seed the price book's new meters, then record the last BILLING_METER_LOOKBACK_HOURS finished hours
    (oldest first); the number of records made or raised."""
    now = now or timezone.now()
    prices_seed()
    last = meters.hour_floor(now) - HOUR
    written = 0
    for back in range(settings.BILLING_METER_LOOKBACK_HOURS - 1, -1, -1):
        written += usage_hour_record(hour=last - back * HOUR, now=now)
    oldest = last - (settings.BILLING_METER_LOOKBACK_HOURS - 1) * HOUR
    if _archives_left(oldest):
        logger.warning("The archives of %s are not all metered and the hour leaves the lookback now: raise "
                       "BILLING_METER_STORAGE_BATCH.", f"{oldest:%Y-%m-%d %H}h")
    if left := edge_metrics.hour_totals_left(oldest.timestamp()):
        logger.warning("The edge counts of %d projects in %s are not metered and the hour leaves the lookback now: "
                       "raise BILLING_METER_EDGE_BATCH.", left, f"{oldest:%Y-%m-%d %H}h")
    return written
