"""Log drains: a project's log lines delivered to an HTTPS endpoint in signed batches, from the log tables, by
a worker (`drains_deliver`, beat), never in a request or a build.

Each drain keeps a cursor per source table (the last delivered line id). A pass takes the lines after the
cursors, filtered by the drain's environments and sampling rate, and sends them when a full batch is waiting
or the oldest one has waited DRAIN_BATCH_INTERVAL_SECONDS. A failed delivery (an answer other than 2xx, or
the outbound guard refusing the address) leaves the cursors where they were and waits
BASE * 2^(failures-1) seconds; after DRAIN_PAUSE_AFTER_FAILURES failures in a row the drain is paused, with
`lastError` saying why. The address goes through config/outbound.py at save and at every delivery."""
import hashlib
import json
import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch, Q
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from config.outbound import OutboundRefused, outbound_check, outbound_request
from platform_app.models import FirewallEvent, LogDrain, LogDrainDelivery, LogLine, RuntimeLogLine
from platform_app.services.automation.signing import SIGNATURE_HEADER, secret_new, secret_of, signature

logger = logging.getLogger(__name__)

SOURCES = ("build", "runtime", "edge", "firewall")
# `build` (LogLine), `runtime` (RuntimeLogLine) and `firewall` (FirewallEvent, whatever the environments filter
# says: the firewall guards every address) are delivered; `edge` (an access log) is accepted and delivers nothing
# until the platform stores one (docs/automation.md).
CONTENT_TYPES = {"json": "application/json", "ndjson": "application/x-ndjson"}
USER_AGENT = "svc-log-drain/1"


# Rules ------------------------------------------------------------------------------------------

def _check(*, url: str, format: str, sources: list[str], environments: list[str], sampling_rate: float) -> None:
    if format not in CONTENT_TYPES:
        raise ValidationFailed("format must be json or ndjson.", details={"format": ["json or ndjson."]})
    unknown = sorted(set(sources) - set(SOURCES))
    if not sources or unknown:
        raise ValidationFailed(f"sources must be some of {', '.join(SOURCES)}.",
                               details={"sources": [f"Unknown: {', '.join(unknown)}." if unknown else "Required."]})
    if not 0 < sampling_rate <= 1:
        raise ValidationFailed("samplingRate must be above 0 and at most 1.",
                               details={"samplingRate": ["Between 0 (excluded) and 1."]})
    if any(not e or len(e) > 64 for e in environments):
        raise ValidationFailed("environments must be environment names.", details={"environments": ["Invalid."]})
    outbound_check(url, purpose="log drain")  # https and outside, or the one generic 400


def _sampled(drain: LogDrain, source: str, line_id: int) -> bool:
    """Deterministic per line, so a retried batch holds the same lines."""
    if drain.sampling_rate >= 1:
        return True
    digest = hashlib.sha256(f"{drain.pk}:{source}:{line_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < drain.sampling_rate


# Drains -----------------------------------------------------------------------------------------

def drains_list(*, project, recent: int = 0):
    """The project's drains; with `recent`, each with its newest deliveries in `recent_deliveries`."""
    drains = LogDrain.objects.filter(project=project)
    if recent:
        drains = drains.prefetch_related(Prefetch("deliveries", LogDrainDelivery.objects.all()[:recent],
                                                  to_attr="recent_deliveries"))
    return drains


def drain_get(*, project, drain_id: str) -> LogDrain:
    drain = LogDrain.objects.filter(project=project, pk=drain_id).first()
    if drain is None:
        raise NotFound("No such log drain.")
    return drain


@transaction.atomic
def drain_create(*, project, url: str, format: str = "json", sources: list[str], environments: list[str] | None = None,
                 sampling_rate: float = 1.0) -> tuple[LogDrain, str]:
    """A new drain and its signing secret (shown once). It starts at the end of the logs: lines written from
    now on are delivered."""
    environments = list(dict.fromkeys(environments or []))
    sources = list(dict.fromkeys(sources))
    _check(url=url, format=format, sources=sources, environments=environments, sampling_rate=sampling_rate)
    type(project).objects.select_for_update().filter(pk=project.pk).first()
    if LogDrain.objects.filter(project=project).count() >= settings.DRAINS_MAX_PER_PROJECT:
        raise Conflict(f"A project has at most {settings.DRAINS_MAX_PER_PROJECT} log drains.", code="limit_reached",
                       details={"limit": settings.DRAINS_MAX_PER_PROJECT})
    plain, encrypted = secret_new()
    last_build = LogLine.objects.filter(deployment__project=project).order_by("-pk").values_list("pk", flat=True)
    last_runtime = (RuntimeLogLine.objects.filter(deployment__project=project).order_by("-pk")
                    .values_list("pk", flat=True))
    last_firewall = FirewallEvent.objects.filter(project=project).order_by("-pk").values_list("pk", flat=True)
    drain = LogDrain.objects.create(project=project, url=url.strip(), format=format, sources=sources,
                                    environments=environments, sampling_rate=sampling_rate, secret_encrypted=encrypted,
                                    build_cursor=last_build.first() or 0, runtime_cursor=last_runtime.first() or 0,
                                    firewall_cursor=last_firewall.first() or 0)
    return drain, plain


@transaction.atomic
def drain_delete(*, project, drain_id: str) -> None:
    deleted, _ = LogDrain.objects.filter(project=project, pk=drain_id).delete()
    if not deleted:
        raise NotFound("No such log drain.")


# Delivery ---------------------------------------------------------------------------------------

def _body(drain: LogDrain, entries: list[dict]) -> bytes:
    if drain.format == LogDrain.Format.NDJSON:
        return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in entries)
    return json.dumps(entries, separators=(",", ":")).encode()


def _send(drain: LogDrain, entries: list[dict], *, test: bool = False) -> LogDrainDelivery:
    """One signed POST of `entries`; the attempt is recorded whatever happens."""
    body = _body(drain, entries)
    headers = {"Content-Type": CONTENT_TYPES[drain.format], "User-Agent": USER_AGENT,
               SIGNATURE_HEADER: signature(secret_of(drain.secret_encrypted), body)}
    started = time.monotonic()
    status_code, error = None, ""
    try:
        answer = outbound_request("POST", drain.url, purpose="log drain", headers=headers, content=body,
                                  max_bytes=64 * 1024, timeout=settings.DRAIN_TIMEOUT_SECONDS)
        status_code = answer.status_code
        if not 200 <= status_code < 300:
            error = f"The endpoint answered {status_code}."
    except OutboundRefused as exc:
        error = exc.message
    return LogDrainDelivery.objects.create(drain=drain, lines=len(entries), test=test, delivered=not error,
                                           status_code=status_code, error=error,
                                           duration_ms=int((time.monotonic() - started) * 1000))


def drain_test(*, project, drain_id: str) -> LogDrainDelivery:
    """Send one test entry now. A paused drain that receives it is active again."""
    drain = drain_get(project=project, drain_id=drain_id)
    entry = {"id": f"test-{int(time.time())}", "source": "test", "projectId": project.pk, "deploymentId": None,
             "environment": None, "timestamp": timezone.now().isoformat(),
             "message": "Test message from the platform's log drain."}
    delivery = _send(drain, [entry], test=True)
    if delivery.delivered and drain.status == LogDrain.Status.PAUSED:
        LogDrain.objects.filter(pk=drain.pk).update(status=LogDrain.Status.ACTIVE, failures=0, next_attempt_at=None,
                                                    last_error="")
    return delivery


def _pending(drain: LogDrain, limit: int) -> tuple[list[dict], dict]:
    """Up to `limit` entries after the cursors (oldest first, build lines before runtime lines of the same pass)
    and the cursors they move to (including lines passed over by sampling)."""
    envs = Q(deployment__env__in=drain.environments) if drain.environments else Q()
    entries, cursors = [], _cursors(drain)
    if "build" in drain.sources:
        rows = (LogLine.objects.filter(envs, deployment__project_id=drain.project_id, pk__gt=drain.build_cursor)
                .select_related("deployment").order_by("pk")[:limit])
        for line in rows:
            cursors["build_cursor"] = line.pk
            if _sampled(drain, "build", line.pk):
                entries.append(_entry("build", line, line.deployment, seq=line.seq, stream=line.stream))
    if "runtime" in drain.sources and len(entries) < limit:
        rows = (RuntimeLogLine.objects.filter(envs, deployment__project_id=drain.project_id,
                                              pk__gt=drain.runtime_cursor)
                .select_related("deployment").order_by("pk")[:limit - len(entries)])
        for line in rows:
            cursors["runtime_cursor"] = line.pk
            if _sampled(drain, "runtime", line.pk):
                entries.append(_entry("runtime", line, line.deployment, instanceId=line.instance_id or None))
    if "firewall" in drain.sources and len(entries) < limit:
        events = (FirewallEvent.objects.filter(project_id=drain.project_id, pk__gt=drain.firewall_cursor)
                  .order_by("pk")[:limit - len(entries)])
        for event in events:
            cursors["firewall_cursor"] = event.pk
            if _sampled(drain, "firewall", event.pk):
                entries.append({"id": f"firewall-{event.pk}", "source": "firewall", "projectId": drain.project_id,
                                "deploymentId": None, "environment": None, "branch": None,
                                "timestamp": event.at.isoformat(),
                                "message": f"{event.action} {event.method} {event.path} from {event.ip}",
                                "ruleId": event.rule_id, "action": event.action, "ip": event.ip,
                                "method": event.method, "path": event.path, "userAgent": event.user_agent})
    return entries, cursors


def _cursors(drain: LogDrain) -> dict:
    return {"build_cursor": drain.build_cursor, "runtime_cursor": drain.runtime_cursor,
            "firewall_cursor": drain.firewall_cursor}


def _entry(source: str, line, deployment, **extra) -> dict:
    return {"id": f"{source}-{line.pk}", "source": source, "projectId": deployment.project_id,
            "deploymentId": deployment.pk, "environment": deployment.env, "branch": deployment.branch,
            "timestamp": line.created_at.isoformat(), "message": line.text, **extra}


def drain_deliver(*, drain_id: str, now=None) -> int:
    """Deliver what is pending for one drain (several batches if a backlog waits); the number of lines sent.
    A lease on the row keeps two workers from sending the same lines."""
    now = now or timezone.now()
    taken = (LogDrain.objects.filter(pk=drain_id, status=LogDrain.Status.ACTIVE)
             .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
             .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
             .update(lease_until=now + timedelta(seconds=settings.DRAIN_LEASE_SECONDS)))
    if not taken:
        return 0
    sent = 0
    try:
        drain = LogDrain.objects.get(pk=drain_id)
        while True:
            entries, cursors = _pending(drain, settings.DRAIN_BATCH_MAX_LINES)
            if not entries:
                if cursors != _cursors(drain):
                    LogDrain.objects.filter(pk=drain.pk).update(**cursors)  # only sampled-out lines
                return sent
            full = len(entries) >= settings.DRAIN_BATCH_MAX_LINES
            oldest = min(datetime.fromisoformat(e["timestamp"]) for e in entries)
            waited = now - oldest >= timedelta(seconds=settings.DRAIN_BATCH_INTERVAL_SECONDS)
            if not full and not waited:
                return sent
            delivery = _send(drain, entries)
            if not delivery.delivered:
                _failed(drain, delivery.error, now)
                return sent
            LogDrain.objects.filter(pk=drain.pk).update(**cursors, failures=0, next_attempt_at=None, last_error="",
                                                        last_delivery_at=timezone.now())
            for name, value in cursors.items():
                setattr(drain, name, value)
            sent += len(entries)
    finally:
        LogDrain.objects.filter(pk=drain_id).update(lease_until=None)


def _failed(drain: LogDrain, error: str, now) -> None:
    failures = drain.failures + 1
    if failures >= settings.DRAIN_PAUSE_AFTER_FAILURES:
        LogDrain.objects.filter(pk=drain.pk).update(
            failures=failures, status=LogDrain.Status.PAUSED, next_attempt_at=None,
            last_error=f"Paused after {failures} failed deliveries in a row; the last: {error}")
        logger.info("log drain %s paused after %s failures", drain.pk, failures)
        return
    delay = min(settings.DRAIN_BACKOFF_BASE_SECONDS * 2 ** (failures - 1), settings.DRAIN_BACKOFF_MAX_SECONDS)
    LogDrain.objects.filter(pk=drain.pk).update(failures=failures, last_error=error,
                                                next_attempt_at=now + timedelta(seconds=delay))


def drains_due(*, now=None) -> list[str]:
    """Ids of the active drains whose next attempt is due (the beat task delivers each)."""
    now = now or timezone.now()
    return list(LogDrain.objects.filter(status=LogDrain.Status.ACTIVE)
                .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)).values_list("pk", flat=True))
