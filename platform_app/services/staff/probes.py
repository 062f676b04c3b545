"""Status probes: once a minute (beat, `status_probes_run`) each SLO's probe measures the running system and
writes one sample for that minute; the minute's hour is rolled up at once (ProbeHour), and minute samples past
STATUS_SAMPLE_RETENTION_HOURS are deleted.

The HTTP probes (API `/health`, the dashboard's sign-in page, the warehouse's `/api/health`, the edge) call the
application **in process**, through Django's whole handler (middleware, the edge, views, database, cache), from
the worker that runs the beat task: they measure the application and its database, not the network or the web
server in front of it, which an outside uptime check covers (docs/staff.md). A probe that raises is a bad
sample of its own component, never a failed run."""
import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from platform_app.models import Deployment, ProbeHour, ProbeSample

logger = logging.getLogger(__name__)

PROBE_RECIPIENT = "status-probe-{minute:02d}@example.com"  # one address per minute of the hour: the per-recipient limit
PROBE_RECORD_KEEP = timedelta(hours=1)  # the probe's own code records are deleted after this


@dataclass
class Measured:
    ok: bool
    latency_ms: int | None
    detail: str = ""
    ref: str = ""


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


# Samples and their hours -------------------------------------------------------------------------

def probe_hour_roll(*, probe: str, hour: datetime) -> ProbeHour | None:
    """(Re)compute one hour of a probe from its minute samples: count, good, p95 latency (nearest rank)."""
    hour = hour_of(hour)
    rows = list(ProbeSample.objects.filter(probe=probe, at__gte=hour, at__lt=hour + timedelta(hours=1))
                .values_list("good", "latency_ms"))
    if not rows:
        return ProbeHour.objects.filter(probe=probe, hour=hour).first()
    latencies = sorted(ms for _, ms in rows if ms is not None)
    p95 = latencies[max(0, math.ceil(0.95 * len(latencies)) - 1)] if latencies else None
    row, _ = ProbeHour.objects.update_or_create(probe=probe, hour=hour, defaults={
        "samples": len(rows), "good": sum(1 for good, _ in rows if good), "p95_ms": p95})
    return row


def probe_sample_record(*, probe: str, at: datetime, good: bool, latency_ms: int | None = None, detail: str = "",
                        ref: str = "") -> ProbeSample:
    """The probe's sample for the minute of `at` (a second one in the same minute replaces it), and its hour
    rolled up again."""
    if probe not in settings.STATUS_SLOS:
        raise ValueError(f"unknown probe {probe!r}")
    sample, _ = ProbeSample.objects.update_or_create(probe=probe, at=minute_of(at), defaults={
        "good": good, "latency_ms": latency_ms, "detail": detail[:300], "ref": ref[:64]})
    probe_hour_roll(probe=probe, hour=sample.at)
    return sample


def probe_samples_prune(*, now: datetime | None = None) -> int:
    """Delete minute samples past their retention (their hours stay)."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.STATUS_SAMPLE_RETENTION_HOURS)
    return ProbeSample.objects.filter(at__lt=cutoff).delete()[0]


# The probes --------------------------------------------------------------------------------------

def _in_process_get(path: str, host: str) -> tuple[int, int]:
    """(status, milliseconds) of a GET through the application's own handler."""
    from django.test import Client  # a WSGI request through the whole middleware stack, no socket

    client = Client(raise_request_exception=False, HTTP_HOST=host, HTTP_USER_AGENT="svc-status-probe/1")
    started = time.perf_counter()
    response = client.get(path)
    return response.status_code, round((time.perf_counter() - started) * 1000)


def _site_host() -> str:
    return urlsplit(settings.SITE_URL).netloc or "localhost"


def _http_probe(path: str, threshold_ms: int) -> Measured:
    status, ms = _in_process_get(path, _site_host())
    if status != 200:
        return Measured(False, ms, f"GET {path} answered {status}")
    return Measured(ms <= threshold_ms, ms, "" if ms <= threshold_ms else f"GET {path} took {ms} ms")


def probe_api(now: datetime, slo: dict) -> Measured:
    return _http_probe("/health", slo["threshold_ms"])


def probe_dashboard(now: datetime, slo: dict) -> Measured:
    return _http_probe("/dashboard/login/", slo["threshold_ms"])


def probe_warehouse(now: datetime, slo: dict) -> Measured:
    return _http_probe("/api/health", slo["threshold_ms"])


def probe_builds(now: datetime, slo: dict) -> Measured | None:
    """The longest queued-to-building wait of the last minute: deployments that started building in it, and the
    oldest one still queued (its wait so far). Nothing queued or started: nothing to measure."""
    since = now - timedelta(minutes=1)
    waits = [(started - created).total_seconds() for created, started in
             Deployment.objects.filter(started_at__gt=since, started_at__lte=now).values_list("created_at", "started_at")]
    oldest = (Deployment.objects.filter(status=Deployment.Status.QUEUED, created_at__lte=now)
              .order_by("created_at").values_list("created_at", flat=True).first())
    if oldest is not None:
        waits.append((now - oldest).total_seconds())
    if not waits:
        return None
    worst = round(max(0.0, max(waits)) * 1000)
    good = worst <= slo["threshold_ms"]
    return Measured(good, worst, f"{len(waits)} measured, longest wait {worst / 1000:.0f} s")


def probe_edge(now: datetime, slo: dict) -> Measured | None:
    """The edge serving the newest ready static deployment (files, no instances) at its own address."""
    from platform_app.services.projects.addresses import deployment_url

    deployment = (Deployment.objects.filter(status=Deployment.Status.READY, component__isnull=True,
                                            instances__isnull=True).exclude(artifact_path="")
                  .select_related("project").order_by("-ready_at", "-created_at").first())
    if deployment is None:
        return None
    status, ms = _in_process_get("/", urlsplit(deployment_url(deployment)).netloc)
    if status >= 500:
        return Measured(False, ms, f"the edge answered {status} for {deployment.pk}", ref=deployment.pk)
    good = ms <= slo["threshold_ms"]
    return Measured(good, ms, f"{deployment.pk} answered {status}" + ("" if good else f" in {ms} ms"), ref=deployment.pk)


def _probe_key():
    """The test key of the probe's workspace (both made on the first run)."""
    from otp_app.models import ApiKey
    from otp_app.services.keys import otp_key_create
    from platform_app.models import Workspace

    workspace, _ = Workspace.objects.get_or_create(slug=settings.STATUS_PROBE_WORKSPACE,
                                                   defaults={"name": "Status probe"})
    key = ApiKey.objects.filter(workspace=workspace, mode=ApiKey.Mode.TEST, revoked_at__isnull=True).first()
    return key or otp_key_create(workspace=workspace, mode=ApiKey.Mode.TEST, name="status probe")[0]


def probe_delivery(now: datetime, slo: dict) -> Measured | None:
    """A test-mode code sent through the worker: each run measures the code the previous run sent (sent → in the
    sandbox outbox), then sends the next one. A code not in the outbox after the threshold is a bad sample; one
    younger than that is waited for (no sample, no new send)."""
    from otp_app.models import OtpRecord, SandboxMessage
    from otp_app.services.records import otp_send

    key = _probe_key()
    OtpRecord.objects.filter(api_key=key, created_at__lt=now - PROBE_RECORD_KEEP).delete()
    measured = None
    last = OtpRecord.objects.filter(api_key=key, created_at__lte=now).order_by("-created_at").first()
    if last is not None and not ProbeSample.objects.filter(probe="delivery", ref=last.pk).exists():
        delivered = (SandboxMessage.objects.filter(record=last).aggregate(at=Max("created_at"))["at"])
        if delivered is not None:
            ms = max(0, round((delivered - last.created_at).total_seconds() * 1000))
            good = ms <= slo["threshold_ms"]
            measured = Measured(good, ms, "" if good else f"delivered after {ms / 1000:.1f} s", ref=last.pk)
        elif (now - last.created_at).total_seconds() * 1000 > slo["threshold_ms"]:
            waited = round((now - last.created_at).total_seconds() * 1000)
            measured = Measured(False, waited, f"not delivered after {waited / 1000:.0f} s", ref=last.pk)
        else:
            return None  # still on its way: measured by a later run
    otp_send(api_key=key, recipient=PROBE_RECIPIENT.format(minute=now.minute), locale="en", channel="email")
    return measured


PROBES = {"api": probe_api, "dashboard": probe_dashboard, "builds": probe_builds, "edge": probe_edge,
          "delivery": probe_delivery, "warehouse": probe_warehouse}


def status_probes_run(*, now: datetime | None = None) -> dict:
    """Run every SLO's probe once and record its sample for this minute; {probe: "good"|"bad"|"none"}."""
    now = now or timezone.now()
    results = {}
    for key, slo in settings.STATUS_SLOS.items():
        probe = PROBES.get(key)
        if probe is None:
            continue
        try:
            measured = probe(now, slo)
        except Exception as exc:  # noqa: BLE001 - a probe that breaks is its component failing
            logger.warning("Status probe %s failed: %s: %s", key, type(exc).__name__, exc)
            measured = Measured(False, None, f"the probe failed: {type(exc).__name__}: {exc}"[:300])
        if measured is None:
            results[key] = "none"
            continue
        probe_sample_record(probe=key, at=now, good=measured.ok, latency_ms=measured.latency_ms,
                            detail=measured.detail, ref=measured.ref)
        results[key] = "good" if measured.ok else "bad"
    probe_samples_prune(now=now)
    return results
