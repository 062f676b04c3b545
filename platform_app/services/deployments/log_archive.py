"""Build logs out of the database once their build is over.

While a deployment builds, its lines are rows (`LogLine`): appended by the builder, followed by streams. Once it
has finished for LOG_ARCHIVE_AFTER_MINUTES, and every active log drain taking its lines has sent them, the beat
moves them to artifact storage as one gzip-compressed JSON-lines object, `logs/<deployment id>.jsonl.gz`, and
deletes the rows: the table holds building deployments' lines, not every line ever written. `log_lines` is how
everything reads a log, rows or archive alike, so replay (`Last-Event-ID`), `lines=`, tails and the doctor answer
the same before and after. With LOG_RETENTION_DAYS set, the logs of deployments finished longer ago are deleted;
such a log reads as empty and the deployment says when it expired (`log_expired_at`).
"""
import bisect
import gzip
import heapq
import json
import logging
import tempfile
from collections import namedtuple
from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from platform_app.models import Deployment, LogDrain, LogLine
from platform_app.services.deployments import artifacts

logger = logging.getLogger(__name__)

Line = namedtuple("Line", "seq stream text created_at")
FINISHED = (Deployment.Status.READY, Deployment.Status.ERROR, Deployment.Status.CANCELED)
EMPTY = "-"  # `log_archive` of a log that had no line: archived, with no object in storage
DELETE_BATCH = 500  # rows per DELETE (and bound parameters per statement)
SCAN_PAGES = 5  # pages of LOG_ARCHIVE_BATCH candidates a beat run looks through past logs drains still hold
FAILURES_PER_RUN = 3


def log_archive_name(deployment_id: str) -> str:
    return f"logs/{deployment_id}.jsonl.gz"


# Reading ------------------------------------------------------------------------------------------

def log_lines(deployment_id: str, *, after: int = 0, limit: int | None = None, tail: int | None = None,
              times: bool = True) -> list[Line]:
    """The log's lines after sequence number `after`, in order: the first `limit`, or the last `tail`, read from its
    archive and from any rows (a building log, or a line written after the archive), as one log. Without `times`,
    rows are read without their `created_at` (None): parsing 2,000 timestamps was a third of a log page's CPU."""
    if (limit is not None and limit <= 0) or (tail is not None and tail <= 0):
        return []
    # Rows first, then where the archive is: an archive committing between the two reads is then read as well
    # (its lines are in both, read once), never missed.
    rows = LogLine.objects.filter(deployment_id=deployment_id, seq__gt=after).values_list(
        "seq", "stream", "text", *(("created_at",) if times else ()))
    line = Line._make if times else (lambda row: Line(*row, None))
    if tail is not None:
        rows = [line(r) for r in rows.order_by("-seq")[:tail]][::-1]
    else:
        rows = [line(r) for r in (rows.order_by("seq")[:limit] if limit is not None else rows.order_by("seq"))]
    archive = Deployment.objects.filter(pk=deployment_id).values_list("log_archive", flat=True).first()
    kept = _archived(archive) if archive and archive != EMPTY else ()
    kept = kept[bisect.bisect_right(kept, after, key=lambda line: line.seq):]
    if tail is not None:
        return _merged(kept[-tail:], rows)[-tail:]
    if limit is not None:
        return _merged(kept[:limit], rows)[:limit]
    return _merged(kept, rows)


def _merged(kept, rows) -> list[Line]:
    """Archive and rows in sequence order; a line in both (read while its archive committed) read once."""
    out: list[Line] = []
    for line in heapq.merge(kept, rows, key=lambda line: line.seq):
        if not out or out[-1].seq != line.seq:
            out.append(line)
    return out


@lru_cache(maxsize=16)
def _archived_cached(name: str) -> tuple[Line, ...]:
    with artifacts.storage().open(name, "rb") as stored, gzip.open(stored, "rt", encoding="utf-8") as text:
        return tuple(Line(r["seq"], r["stream"], r["text"], parse_datetime(r["at"])) for r in map(json.loads, text))


def _archived(name: str) -> tuple[Line, ...]:
    """An archive's lines, kept for the few logs being replayed now (a replay reads in pages). An archive storage
    cannot give reads as no lines, logged: a log reader answers, it does not fail."""
    try:
        return _archived_cached(name)
    except Exception:  # noqa: BLE001 - storage down or the object gone (expired by a run that has not committed)
        logger.warning("build log archive %s could not be read", name, exc_info=True)
        return ()


# Archiving ----------------------------------------------------------------------------------------

def log_archive(deployment_id: str, *, through_pk: int | None = None) -> bool:
    """Move a finished deployment's lines (those with an id up to `through_pk`, when given: what log drains have
    sent) to artifact storage and delete their rows. False when it is not finished, already archived or expired.

    The conditional UPDATE claims the deployment: a second run at the same time waits on its row (PostgreSQL) or
    on the database's write lock (SQLite), then finds it claimed and does nothing. Until the transaction commits,
    readers see the rows; after it, the archive: never neither, never a line twice."""
    name = log_archive_name(deployment_id)
    with transaction.atomic():
        claimed = (Deployment.objects.filter(pk=deployment_id, status__in=FINISHED, log_archive="",
                                             log_expired_at__isnull=True).update(log_archive=name))
        if not claimed:
            return False
        rows = LogLine.objects.filter(deployment_id=deployment_id)
        if through_pk is not None:
            rows = rows.filter(pk__lte=through_pk)
        if not rows.exists():  # nothing to keep (a build that never started): no object, marked done
            Deployment.objects.filter(pk=deployment_id).update(log_archive=EMPTY)
            return True
        pks, last = [], 0
        with tempfile.SpooledTemporaryFile(max_size=4 << 20) as spooled:
            with gzip.GzipFile(fileobj=spooled, mode="wb") as packed:
                for pk, seq, stream, text, at in rows.order_by("seq").values_list(
                        "pk", "seq", "stream", "text", "created_at").iterator(chunk_size=2000):
                    packed.write(json.dumps({"seq": seq, "stream": stream, "text": text, "at": at.isoformat()})
                                 .encode() + b"\n")
                    pks.append(pk)
                    last = seq
            spooled.seek(0)
            store = artifacts.storage()
            if store.exists(name):  # left by a run that died before its commit: replaced, never renamed
                store.delete(name)
            saved = store.save(name, File(spooled, name=name))
        previous = Deployment.objects.filter(pk=deployment_id).values_list("log_lines_archived", flat=True).first()
        Deployment.objects.filter(pk=deployment_id).update(log_archive=saved,
                                                           log_lines_archived=max(last, previous or 0))
        for start in range(0, len(pks), DELETE_BATCH):
            LogLine.objects.filter(pk__in=pks[start:start + DELETE_BATCH]).delete()
    return True


def _drained_through(candidates: list[tuple[str, str, str]]) -> dict[str, int | None]:
    """Of (deployment id, project id, env) candidates, those whose lines every active log drain taking them has
    sent, each with the last line id to archive (None: all; a drain's cursor: up to what it sent, so a line written
    meanwhile stays a row it will still send). Paused drains hold nothing back: lines archived while a drain is
    paused are passed over when it resumes (docs/automation.md)."""
    drains: dict[str, list[tuple[list, int]]] = {}
    for project_id, sources, environments, cursor in LogDrain.objects.filter(
            project_id__in={c[1] for c in candidates}, status=LogDrain.Status.ACTIVE).values_list(
            "project_id", "sources", "environments", "build_cursor"):
        if "build" in sources:
            drains.setdefault(project_id, []).append((environments, cursor))
    cursors = {}
    for pk, project_id, env in candidates:
        taking = [cursor for environments, cursor in drains.get(project_id, ()) if not environments
                  or env in environments]
        cursors[pk] = min(taking) if taking else None
    held = [pk for pk, cursor in cursors.items() if cursor is not None]
    newest = dict(LogLine.objects.filter(deployment_id__in=held).values("deployment_id")
                  .annotate(m=Max("pk")).values_list("deployment_id", "m")) if held else {}
    return {pk: cursor for pk, cursor in cursors.items()
            if cursor is None or newest.get(pk) is None or newest[pk] <= cursor}


def logs_archive_due(*, now=None) -> int:
    """Beat: archive up to LOG_ARCHIVE_BATCH logs of deployments finished LOG_ARCHIVE_AFTER_MINUTES ago or more,
    oldest first, passing over those a log drain has not sent yet; how many."""
    now = now or timezone.now()
    due = (Deployment.objects.filter(status__in=FINISHED, log_archive="", log_expired_at__isnull=True,
                                     finished_at__lt=now - timedelta(minutes=settings.LOG_ARCHIVE_AFTER_MINUTES))
           .order_by("finished_at", "pk"))
    done, failed, page, after = 0, 0, settings.LOG_ARCHIVE_BATCH, None
    for _ in range(SCAN_PAGES):
        rows = due if after is None else due.filter(Q(finished_at__gt=after[0]) | Q(finished_at=after[0],
                                                                                     pk__gt=after[1]))
        candidates = list(rows.values_list("pk", "project_id", "env", "finished_at")[:page])
        for pk, through in _drained_through([c[:3] for c in candidates]).items():
            try:
                done += log_archive(pk, through_pk=through)
            except Exception:  # noqa: BLE001 - its rows stay, read as before; the next run tries again
                logger.exception("build log of %s not archived", pk)
                failed += 1
                if failed >= FAILURES_PER_RUN:  # storage is down: no use trying the rest now
                    return done
            if done >= page:
                return done
        if len(candidates) < page:
            return done
        after = (candidates[-1][3], candidates[-1][0])
    return done


# Retention ----------------------------------------------------------------------------------------

def log_expire(deployment_id: str, *, now=None) -> bool:
    """Delete a finished deployment's log, archive and rows, and say when on the deployment (`log_expired_at`);
    False when already done. The sequence number stays, so a late line numbers on after the deleted ones."""
    with transaction.atomic():
        archive = (Deployment.objects.select_for_update().filter(pk=deployment_id, log_expired_at__isnull=True)
                   .values_list("log_archive", flat=True).first())
        if archive is None or not Deployment.objects.filter(pk=deployment_id, log_expired_at__isnull=True).update(
                log_expired_at=now or timezone.now(), log_archive=""):
            return False
        while batch := list(LogLine.objects.filter(deployment_id=deployment_id)
                            .values_list("pk", flat=True)[:DELETE_BATCH]):
            LogLine.objects.filter(pk__in=batch).delete()
        if archive and archive != EMPTY:
            # inside the transaction: a crash before the commit leaves the log whole, to be expired again
            try:
                artifacts.storage().delete(archive)
            except FileNotFoundError:
                pass
    _archived_cached.cache_clear()
    return True


def logs_expire(*, now=None) -> int:
    """Beat: with LOG_RETENTION_DAYS set, delete the logs of up to LOG_ARCHIVE_BATCH deployments finished longer
    ago than that, oldest first; how many."""
    if not settings.LOG_RETENTION_DAYS:
        return 0
    now = now or timezone.now()
    due = (Deployment.objects.filter(status__in=FINISHED, log_expired_at__isnull=True,
                                     finished_at__lt=now - timedelta(days=settings.LOG_RETENTION_DAYS))
           .order_by("finished_at", "pk").values_list("pk", flat=True)[:settings.LOG_ARCHIVE_BATCH])
    return sum(log_expire(pk, now=now) for pk in list(due))
