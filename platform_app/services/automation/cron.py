"""Cron jobs: five-field schedules in a timezone that call a path of the project's deployment through the edge.

Once per job and minute: `cron_tick` (beat, each minute) inserts one CronRun per due (job, minute); the unique
constraint makes a second beat process, or a restarted one, lose the insert (IntegrityError) and do nothing. The
run is then executed by a worker (`cron_run_execute`), never retried unless the job asks for it (`retries`)."""
import logging
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Prefetch
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from config.jobs import enqueue, publish
from platform_app.models import CronJob, CronRun, Deployment
from platform_app.services.automation.edge_call import edge_get
from platform_app.services.automation.signing import secret_new, secret_of
from platform_app.services.projects.addresses import deployment_url, project_url

logger = logging.getLogger(__name__)

SECRET_HEADER = "x-svc-cron-secret"
RUN_TASK = "platform_app.tasks.automation.cron_run_execute"
NEXT_RUNS = 5
FIELD_RE = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")
PATH_RE = re.compile(r"^/[^\s\\#]*$")


# Rules ------------------------------------------------------------------------------------------

def _zone(name: str) -> ZoneInfo:
    if not name or name not in _zone_names():
        raise ValidationFailed(f"Unknown timezone {name!r}.", details={"timezone": ["Unknown IANA timezone."]})
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationFailed(f"Unknown timezone {name!r}.", details={"timezone": ["Unknown IANA timezone."]})


def _zone_names() -> set:
    if not hasattr(_zone_names, "cached"):
        _zone_names.cached = available_timezones() | {"UTC"}
    return _zone_names.cached


def _croniter(schedule: str, start: datetime):
    """croniter loads where a schedule is read: a web worker serving anything else does not carry it (2 MiB)."""
    from croniter import croniter

    return croniter(schedule, start)


def schedule_check(schedule: str, tz_name: str) -> str:
    """A five-field cron expression that runs no more often than CRON_MIN_INTERVAL_SECONDS; 400 otherwise."""
    schedule = " ".join((schedule or "").split())
    fields = schedule.split(" ")
    if len(fields) != 5 or not all(FIELD_RE.match(f) for f in fields):
        raise ValidationFailed("schedule must be a five-field cron expression (minute hour day month weekday).",
                               details={"schedule": ["Five fields: minute hour day-of-month month day-of-week."]})
    tz = _zone(tz_name)
    try:
        it = _croniter(schedule, datetime.now(tz))
        times = [it.get_next(datetime) for _ in range(12)]
    except (ValueError, KeyError, TypeError) as exc:  # croniter's errors are ValueErrors
        raise ValidationFailed(f"schedule is not a valid cron expression ({exc}).",
                               details={"schedule": ["Invalid cron expression."]})
    gap = min((b - a).total_seconds() for a, b in zip(times, times[1:]))
    if gap < settings.CRON_MIN_INTERVAL_SECONDS:
        raise ValidationFailed(f"schedule runs too often: at most once every {settings.CRON_MIN_INTERVAL_SECONDS} s.",
                               code="schedule_too_frequent", details={"schedule": ["Too frequent."]})
    return schedule


def path_check(path: str) -> str:
    """A path of the project's own site (`/api/cron?x=1`): no scheme, no host, no fragment, no whitespace."""
    parts = urlsplit(path or "")
    if (not PATH_RE.match(path or "") or path.startswith("//") or parts.scheme or parts.netloc
            or len(path) > 1024 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in path)):
        raise ValidationFailed("path must be a path on the project's site, starting with `/`.",
                               details={"path": ["Must be a path such as /api/cron."]})
    return path


def next_runs(job: CronJob, *, count: int = NEXT_RUNS, after: datetime | None = None) -> list[datetime]:
    """The next `count` times the job is due, in UTC."""
    tz = ZoneInfo(job.timezone)
    it = _croniter(job.schedule, (after or timezone.now()).astimezone(tz))
    return [it.get_next(datetime).astimezone(UTC) for _ in range(count)]


def last_run(job: CronJob) -> CronRun | None:
    if hasattr(job, "recent_runs"):  # loaded by cron_jobs_list
        return job.recent_runs[0] if job.recent_runs else None
    return job.runs.order_by("-scheduled_for").first()


# Jobs -------------------------------------------------------------------------------------------

def cron_jobs_list(*, project, recent: int = 1):
    """The project's jobs, each with its `recent` newest runs in `recent_runs` (one query for all of them)."""
    runs = CronRun.objects.order_by("-scheduled_for")[:recent]
    return CronJob.objects.filter(project=project).prefetch_related(Prefetch("runs", runs, to_attr="recent_runs"))


def cron_job_get(*, project, cron_id: str) -> CronJob:
    job = CronJob.objects.filter(project=project, pk=cron_id).first()
    if job is None:
        raise NotFound("No such cron job.")
    return job


@transaction.atomic
def cron_job_create(*, project, schedule: str, path: str, timezone_name: str = "UTC", branch: str = "",
                    enabled: bool = True, retries: int = 0) -> tuple[CronJob, str]:
    """A new job and its secret (shown once; stored encrypted so runs can send it)."""
    schedule = schedule_check(schedule, timezone_name)
    path_check(path)
    _retries_check(retries)
    type(project).objects.select_for_update().filter(pk=project.pk).first()  # counts below are not raced
    if CronJob.objects.filter(project=project).count() >= settings.CRON_MAX_JOBS_PER_PROJECT:
        raise Conflict(f"A project has at most {settings.CRON_MAX_JOBS_PER_PROJECT} cron jobs.", code="limit_reached",
                       details={"limit": settings.CRON_MAX_JOBS_PER_PROJECT})
    plain, encrypted = secret_new()
    job = CronJob.objects.create(project=project, schedule=schedule, timezone=timezone_name, path=path,
                                 branch=branch or "", enabled=enabled, retries=retries, secret_encrypted=encrypted)
    return job, plain


def _retries_check(retries: int) -> None:
    if not 0 <= retries <= settings.CRON_MAX_RETRIES:
        raise ValidationFailed(f"retries must be between 0 and {settings.CRON_MAX_RETRIES}.",
                               details={"retries": [f"0 to {settings.CRON_MAX_RETRIES}."]})


@transaction.atomic
def cron_job_update(*, project, cron_id: str, enabled: bool | None = None, schedule: str | None = None,
                    path: str | None = None, timezone_name: str | None = None, retries: int | None = None,
                    rotate_secret: bool = False) -> tuple[CronJob, str | None]:
    """Toggle, reschedule, move or rotate the secret (the new one is returned once)."""
    job = CronJob.objects.select_for_update().filter(project=project, pk=cron_id).first()
    if job is None:
        raise NotFound("No such cron job.")
    tz_name = timezone_name if timezone_name is not None else job.timezone
    if schedule is not None or timezone_name is not None:
        job.schedule = schedule_check(schedule if schedule is not None else job.schedule, tz_name)
        job.timezone = tz_name
    if path is not None:
        job.path = path_check(path)
    if retries is not None:
        _retries_check(retries)
        job.retries = retries
    if enabled is not None:
        job.enabled = enabled
    plain = None
    if rotate_secret:
        plain, job.secret_encrypted = secret_new()
    job.updated_at = timezone.now()
    job.save()
    return job, plain


@transaction.atomic
def cron_job_delete(*, project, cron_id: str) -> None:
    deleted, _ = CronJob.objects.filter(project=project, pk=cron_id).delete()
    if not deleted:
        raise NotFound("No such cron job.")


def cron_runs_list(*, project, cron_id: str):
    return CronRun.objects.filter(job=cron_job_get(project=project, cron_id=cron_id))


# Scheduling -------------------------------------------------------------------------------------

def due_minute(job: CronJob, now: datetime) -> datetime | None:
    """The scheduled minute (UTC) this tick is responsible for: the latest one at or before `now`, if it is not
    older than the grace period and not before the job existed."""
    tz = ZoneInfo(job.timezone)
    base = now.astimezone(tz).replace(second=0, microsecond=0) + timedelta(seconds=1)
    due = _croniter(job.schedule, base).get_prev(datetime).astimezone(UTC)
    if due > now or now - due > timedelta(seconds=settings.CRON_MISSED_GRACE_SECONDS) or due < job.created_at:
        return None
    return due


def cron_tick(*, now: datetime | None = None) -> int:
    """Insert the runs that are due (once per job and minute, whoever else ticks) and enqueue them; a job whose
    previous run is still going gets a `skipped` run instead. Returns the number of runs enqueued."""
    now = now or timezone.now()
    enqueued = 0
    for job in CronJob.objects.filter(enabled=True).select_related("project"):
        try:
            due = due_minute(job, now)
        except (ValueError, KeyError, ZoneInfoNotFoundError):  # croniter's errors are ValueErrors
            logger.warning("cron job %s has an unreadable schedule %r", job.pk, job.schedule)
            continue
        if due is None:
            continue
        stale = now - timedelta(seconds=settings.CRON_RUN_STALE_SECONDS)
        busy = (CronRun.objects.filter(job=job, scheduled_for__lt=due, created_at__gte=stale,
                                       status__in=(CronRun.Status.QUEUED, CronRun.Status.RUNNING)).exists())
        fields = ({"status": CronRun.Status.SKIPPED, "finished_at": now,
                   "error": "The previous run was still going when this one was due."} if busy else {})
        try:
            with transaction.atomic():
                run = CronRun.objects.create(job=job, scheduled_for=due, created_at=now, **fields)
        except IntegrityError:
            continue  # another beat process took this minute
        if not busy:
            enqueue(RUN_TASK, run.pk)
            enqueued += 1
    return enqueued


def _target(job: CronJob) -> tuple[Deployment | None, str]:
    """(deployment, host) the job calls: the production deployment, or the newest ready one of its branch."""
    project = job.project
    if job.branch:
        deployment = (Deployment.objects.filter(project=project, branch=job.branch, status=Deployment.Status.READY)
                      .select_related("project").order_by("-created_at").first())
        if deployment is None:
            return None, f"The branch {job.branch} has no ready deployment."
        return deployment, urlsplit(deployment_url(deployment)).netloc
    deployment = project.production_deployment
    if deployment is None or deployment.status != Deployment.Status.READY:
        return None, "The project has no ready production deployment."
    return deployment, urlsplit(project_url(project)).netloc


def cron_run_execute(*, run_id: str) -> str | None:
    """Call the job's path once for this run (a second delivery of the same run does nothing)."""
    started = timezone.now()
    claimed = CronRun.objects.filter(pk=run_id, status=CronRun.Status.QUEUED).update(
        status=CronRun.Status.RUNNING, started_at=started, attempts=F("attempts") + 1)
    if not claimed:
        return None
    run = CronRun.objects.select_related("job__project__production_deployment").get(pk=run_id)
    job = run.job
    if not job.enabled:
        return _finish(run, CronRun.Status.SKIPPED, error="The job was disabled before it ran.")
    deployment, where = _target(job)
    if deployment is None:
        return _finish(run, CronRun.Status.FAILED, error=where)
    try:
        answer = edge_get(host=where, path=job.path, headers={SECRET_HEADER: secret_of(job.secret_encrypted),
                                                             "user-agent": "svc-cron/1"})
    except Exception as exc:  # noqa: BLE001 - recorded on the run, never raised into the worker
        logger.exception("cron run %s failed", run.pk)
        return _finish(run, CronRun.Status.FAILED, error=f"{type(exc).__name__}: the call could not be made.")
    ok = answer.status_code < 400
    status = CronRun.Status.SUCCEEDED if ok else CronRun.Status.FAILED
    error = "" if ok else f"The app answered {answer.status_code}."
    if not ok and run.attempts <= job.retries:
        CronRun.objects.filter(pk=run.pk).update(status=CronRun.Status.QUEUED, status_code=answer.status_code,
                                                 duration_ms=answer.duration_ms, response_head=answer.head,
                                                 error=f"{error} Retrying ({run.attempts}/{job.retries}).")
        publish(RUN_TASK, (run.pk,), countdown=settings.CRON_RETRY_DELAY_SECONDS * run.attempts)
        return "retrying"
    return _finish(run, status, error=error, status_code=answer.status_code, duration_ms=answer.duration_ms,
                   head=answer.head)


def _finish(run: CronRun, status: str, *, error: str = "", status_code=None, duration_ms=None, head="") -> str:
    CronRun.objects.filter(pk=run.pk).update(status=status, error=error, status_code=status_code,
                                             duration_ms=duration_ms, response_head=head, finished_at=timezone.now())
    return status
