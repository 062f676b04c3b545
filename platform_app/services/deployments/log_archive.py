"""Build logs out of the database once their build is over.

While a deployment builds, its lines are rows (`LogLine`): appended by the builder, followed by streams. Once it
has finished for LOG_ARCHIVE_AFTER_MINUTES (time for log drains to forward the last lines), the beat moves them to
artifact storage as one gzip-compressed JSON-lines object, `logs/<deployment id>.jsonl.gz`, and deletes the rows:
the table holds building deployments' lines, not every line ever written. `log_lines` is how everything reads a
log, rows or archive alike, so replay (`Last-Event-ID`), tails and the doctor answer the same before and after.
With LOG_RETENTION_DAYS set, the logs of deployments finished longer ago are deleted; such a log reads as empty and
the deployment says when it expired (`log_expired_at`).
"""
import gzip
import json
from collections import namedtuple
from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from platform_app.models import Deployment, LogLine
from platform_app.services.deployments import artifacts

Line = namedtuple("Line", "seq stream text created_at")
FINISHED = (Deployment.Status.READY, Deployment.Status.ERROR, Deployment.Status.CANCELED)
EMPTY = "-"  # `log_archive` of a log that had no line: archived, with no object in storage
DELETE_BATCH = 5000


def log_lines(deployment_id: str, *, after: int = 0, limit: int | None = None, tail: int | None = None) -> list[Line]:
    """The log's lines after sequence number `after` (the first `limit`, or the last `tail`), from its archive and
    any rows written since."""
    archive, archived = (Deployment.objects.filter(pk=deployment_id)
                         .values_list("log_archive", "log_lines_archived").first() or ("", 0))
    stored = archive and archive != EMPTY and archived > after
    lines = [line for line in _archived(archive) if line.seq > after] if stored else []
    rows = LogLine.objects.filter(deployment_id=deployment_id, seq__gt=after)
    if tail is not None:
        recent = [Line(*r) for r in rows.order_by("-seq").values_list("seq", "stream", "text", "created_at")[:tail]]
        return (lines + recent[::-1])[-tail:]
    if limit is not None and len(lines) >= limit:
        return lines[:limit]
    more = rows.order_by("seq").values_list("seq", "stream", "text", "created_at")
    more = more[:limit - len(lines)] if limit is not None else more
    return lines + [Line(*r) for r in more]


@lru_cache(maxsize=16)
def _archived(name: str) -> tuple[Line, ...]:
    """An archive's lines (kept for the few logs being replayed now: a replay reads in pages)."""
    with artifacts.storage().open(name, "rb") as stored, gzip.open(stored, "rt", encoding="utf-8") as text:
        return tuple(Line(r["seq"], r["stream"], r["text"], parse_datetime(r["at"]))
                     for r in map(json.loads, text))


def log_archive(deployment_id: str) -> bool:
    """Move a finished deployment's lines to artifact storage and delete their rows; False when it is not finished,
    already archived, or another run holds it. Safe to run twice or at once: the row lock decides."""
    with transaction.atomic():
        row = (Deployment.objects.select_for_update(skip_locked=True)
               .filter(pk=deployment_id, status__in=FINISHED, log_archive="", log_expired_at__isnull=True).first())
        if row is None:
            return False
        lines = LogLine.objects.filter(deployment_id=row.pk).order_by("seq").values_list(
            "seq", "stream", "text", "created_at")
        if not lines.exists():  # nothing to keep (a build that never started): no object, marked done
            Deployment.objects.filter(pk=row.pk).update(log_archive=EMPTY)
            return True
        body = gzip.compress("".join(json.dumps({"seq": seq, "stream": stream, "text": text, "at": at.isoformat()})
                                     + "\n" for seq, stream, text, at in lines.iterator()).encode())
        name = f"logs/{row.pk}.jsonl.gz"
        if artifacts.storage().exists(name):  # a run that died after writing it: this one replaces it
            artifacts.storage().delete(name)
        name = artifacts.storage().save(name, ContentFile(body))
        last = lines.reverse().values_list("seq", flat=True).first() or 0
        Deployment.objects.filter(pk=row.pk).update(log_archive=name, log_lines_archived=last)
        _delete_rows(LogLine.objects.filter(deployment_id=row.pk))
    return True


def _delete_rows(queryset) -> None:
    """In batches, so a long log is never one huge DELETE."""
    while True:
        batch = list(queryset.values_list("pk", flat=True)[:DELETE_BATCH])
        if not batch:
            return
        LogLine.objects.filter(pk__in=batch).delete()


def logs_archive_due() -> int:
    """Beat: archive up to LOG_ARCHIVE_BATCH logs of deployments finished LOG_ARCHIVE_AFTER_MINUTES ago or more,
    oldest first; how many."""
    before = timezone.now() - timedelta(minutes=settings.LOG_ARCHIVE_AFTER_MINUTES)
    due = (Deployment.objects.filter(status__in=FINISHED, finished_at__lt=before, log_archive="",
                                     log_expired_at__isnull=True)
           .order_by("finished_at").values_list("pk", flat=True)[:settings.LOG_ARCHIVE_BATCH])
    return sum(log_archive(pk) for pk in list(due))


def logs_expire() -> int:
    """Beat: with LOG_RETENTION_DAYS set, delete the logs (archive and rows) of up to LOG_ARCHIVE_BATCH
    deployments finished longer ago than that; how many."""
    if not settings.LOG_RETENTION_DAYS:
        return 0
    before = timezone.now() - timedelta(days=settings.LOG_RETENTION_DAYS)
    due = list(Deployment.objects.filter(finished_at__lt=before, log_expired_at__isnull=True)
               .order_by("finished_at").values_list("pk", "log_archive")[:settings.LOG_ARCHIVE_BATCH])
    for pk, archive in due:
        with transaction.atomic():
            if not Deployment.objects.filter(pk=pk, log_expired_at__isnull=True).update(
                    log_expired_at=timezone.now(), log_archive="", log_lines_archived=0):
                continue
            _delete_rows(LogLine.objects.filter(deployment_id=pk))
        if archive and archive != EMPTY:
            artifacts.source_delete(archive)
            _archived.cache_clear()
    return len(due)
