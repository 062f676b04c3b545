"""The staff reports: what `/v1/admin/...` answers and the Django admin's overview page shows, from the same
functions, so the two always agree. Reads only; nothing here is invented: data the platform does not store
(invoices, usage records until the billing area adds them) is reported absent, with the reason."""
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.utils import timezone

from config.errors import NotFound
from platform_app.models import (AgentNode, AuditEvent, BuildJob, Deployment, DoctorReport, Domain, Membership,
                                 Project, Workspace)
from platform_app.services.deployments.doctor import diagnose

FAILURE_WINDOW_DAYS = 7  # the overview's build failure rate
DIAGNOSE_MAX = 500  # failures without a stored doctor report diagnosed per deploy-failures report
UNEXPLAINED = "unexplained"


def _day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


# Overview ------------------------------------------------------------------------------------------

def nodes_online(*, now: datetime | None = None) -> dict:
    """Online nodes that heartbeat within AGENT_HEARTBEAT_TIMEOUT_SECONDS, by capability: agents run instances
    (`process`/`container`), builders claim builds (`build`); a node with both counts in both."""
    now = now or timezone.now()
    fresh = now - timedelta(seconds=settings.AGENT_HEARTBEAT_TIMEOUT_SECONDS)
    runtimes = AgentNode.objects.filter(status=AgentNode.Status.ONLINE, last_heartbeat_at__gte=fresh).values_list(
        "runtimes", flat=True)
    agents = builders = 0
    for caps in runtimes:
        caps = set(caps or [])
        agents += bool(caps & {"process", "container"})
        builders += "build" in caps
    return {"agents": agents, "builders": builders}


def queue_length() -> int:
    """Deployments queued (for the worker to prepare) or prepared and waiting for a builder to claim them."""
    queued = Deployment.objects.filter(status=Deployment.Status.QUEUED).count()
    waiting = BuildJob.objects.filter(state=BuildJob.State.PENDING, deployment__status=Deployment.Status.BUILDING).count()
    return queued + waiting


def overview(*, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    today = _day_start(now)
    week = today - timedelta(days=today.weekday())  # Monday 00:00 UTC
    window = now - timedelta(days=FAILURE_WINDOW_DAYS)
    deployments = Deployment.objects.aggregate(
        today=Count("pk", filter=Q(created_at__gte=today)), week=Count("pk", filter=Q(created_at__gte=week)),
        failed=Count("pk", filter=Q(status=Deployment.Status.ERROR, finished_at__gte=window)),
        finished=Count("pk", filter=Q(status__in=[Deployment.Status.ERROR, Deployment.Status.READY],
                                      finished_at__gte=window)))
    nodes = nodes_online(now=now)
    return {
        "users": get_user_model().objects.count(), "workspaces": Workspace.objects.count(),
        "projects": Project.objects.count(),
        "deployments_today": deployments["today"], "deployments_this_week": deployments["week"],
        "build_failure_rate": (round(100 * deployments["failed"] / deployments["finished"], 2)
                               if deployments["finished"] else None),
        "builds_finished": deployments["finished"], "builds_failed": deployments["failed"],
        "failure_window_days": FAILURE_WINDOW_DAYS,
        "queue_length": queue_length(), "agents_online": nodes["agents"], "builders_online": nodes["builders"],
        "at": now,
    }


def tiers() -> dict:
    """Workspaces per plan: every plan of PLANS (zero included), then any other value a workspace holds."""
    counts = dict(Workspace.objects.values_list("plan").annotate(n=Count("pk")).values_list("plan", "n"))
    plans = list(settings.PLANS) + sorted(set(counts) - set(settings.PLANS))
    return {"items": [{"plan": plan, "workspaces": counts.get(plan, 0), "known": plan in settings.PLANS}
                      for plan in plans], "total": sum(counts.values())}


# Running configuration -----------------------------------------------------------------------------

def _url_without_password(url: str) -> str | None:
    from urllib.parse import urlsplit, urlunsplit

    if not url:
        return None
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def running_config() -> dict:
    """The settings that matter to staff, as this process runs them: no key, secret or password, only whether a
    provider is configured."""
    db = settings.DATABASES["default"]
    providers = {name: bool(conf.get("client_id")) for name, conf in settings.GIT_PROVIDERS.items()}
    providers.update({
        "idp": bool(settings.IDP.get("issuer") and settings.IDP.get("client_id")),
        "twilio": bool(settings.TWILIO_ACCOUNT_SID and settings.TWILIO_AUTH_TOKEN),
        "whatsapp": bool(settings.WHATSAPP_PHONE_NUMBER_ID and settings.WHATSAPP_ACCESS_TOKEN),
        "email_codes": bool(settings.OTP_EMAIL_ENABLED),
        "addons_postgres": bool(getattr(settings, "ADDONS_POSTGRES_URL", "")),
        "addons_redis": bool(getattr(settings, "ADDONS_REDIS_URL", "")),
        "git_a_webhooks": bool(settings.GIT_A_WEBHOOK_SECRET),
    })
    return {
        "debug": settings.DEBUG,
        "allowed_hosts": list(settings.ALLOWED_HOSTS),
        "site_url": settings.SITE_URL,
        "database": {"engine": db["ENGINE"].rsplit(".", 1)[-1], "host": db.get("HOST") or None,
                     "port": str(db.get("PORT") or "") or None,
                     "name": str(db.get("NAME")) if db["ENGINE"].endswith("sqlite3") else db.get("NAME")},
        "redis": _url_without_password(settings.REDIS_URL),
        "sandbox": {"runner": settings.SANDBOX_RUNNER, "allow_none": settings.SANDBOX_ALLOW_NONE,
                    "build_inline": settings.BUILD_INLINE, "host_uid": settings.SANDBOX_HOST_UID,
                    "egress_allowed_networks": list(settings.SANDBOX_EGRESS_ALLOWED_NETWORKS)},
        "build_limits": {"timeout_seconds": settings.BUILD_TIMEOUT_SECONDS, "memory_mb": settings.BUILD_MEMORY_MB,
                         "cpu_seconds": settings.BUILD_CPU_SECONDS, "processes": settings.BUILD_PROCESSES,
                         "disk_mb": settings.BUILD_DISK_MB, "artifact_max_bytes": settings.ARTIFACT_MAX_BYTES,
                         "artifact_max_files": settings.ARTIFACT_MAX_FILES},
        "outbound": {"allow_http": settings.OUTBOUND_ALLOW_HTTP,
                     "allowed_networks": list(settings.OUTBOUND_ALLOWED_NETWORKS),
                     "dns_servers": list(settings.OUTBOUND_DNS_SERVERS),
                     "timeout_seconds": settings.OUTBOUND_TIMEOUT_SECONDS,
                     "max_response_bytes": settings.OUTBOUND_MAX_RESPONSE_BYTES},
        "providers": providers,
    }


# Deploy failures -----------------------------------------------------------------------------------

def deploy_failures(*, days: int, now: datetime | None = None) -> dict:
    """Deployments that failed in the last `days` days grouped by the doctor's finding (`rule`): a stored doctor
    report's findings when there is one, else the doctor run now (at most DIAGNOSE_MAX of them); a failure the
    doctor explains with nothing is `unexplained`. A deployment with two findings counts in both groups."""
    now = now or timezone.now()
    since = now - timedelta(days=days)
    failed = list(Deployment.objects.filter(status=Deployment.Status.ERROR, created_at__gte=since)
                  .select_related("project").order_by("-created_at"))
    reports = {}
    for report in DoctorReport.objects.filter(deployment__in=[d.pk for d in failed]).order_by("created_at"):
        reports[report.deployment_id] = report.findings  # the newest wins
    groups: dict = {}
    diagnosed = 0
    for deployment in failed:
        findings = reports.get(deployment.pk)
        if findings is None:
            if diagnosed >= DIAGNOSE_MAX:
                findings = [{"rule": UNEXPLAINED, "title": "Not diagnosed (too many failures in the window)"}]
            else:
                diagnosed += 1
                findings = [f.__dict__ for f in diagnose(deployment)]
        rules = {}
        for finding in findings or [{"rule": UNEXPLAINED, "title": "The doctor found nothing it knows"}]:
            rules.setdefault(finding["rule"], finding.get("title", ""))
        for rule, title in rules.items():
            group = groups.setdefault(rule, {"rule": rule, "title": title, "count": 0, "deployments": []})
            group["count"] += 1
            if len(group["deployments"]) < 5:
                group["deployments"].append(deployment.pk)
    items = sorted(groups.values(), key=lambda g: (-g["count"], g["rule"]))
    return {"days": days, "since": since, "failures": len(failed), "groups": items}


# Lists ---------------------------------------------------------------------------------------------

def workspaces_list():
    return Workspace.objects.annotate(member_count=Count("memberships", distinct=True),
                                      project_count=Count("projects", distinct=True))


def users_list():
    return get_user_model().objects.annotate(workspace_count=Count("memberships"))


def deployments_list():
    return Deployment.objects.select_related("project__workspace")


def audit_list():
    return AuditEvent.objects.select_related("actor", "workspace")


def workspace_detail(*, ref: str) -> dict:
    """One workspace in full: members, projects, nodes, plan and counts (by id or slug)."""
    workspace = Workspace.objects.filter(Q(pk=ref) | Q(slug=ref)).first()
    if workspace is None:
        raise NotFound("No such workspace.")
    week = timezone.now() - timedelta(days=7)
    deployments = Deployment.objects.filter(project__workspace=workspace).aggregate(
        total=Count("pk"), week=Count("pk", filter=Q(created_at__gte=week)),
        failed_week=Count("pk", filter=Q(created_at__gte=week, status=Deployment.Status.ERROR)))
    members = list(Membership.objects.filter(workspace=workspace).select_related("user"))
    projects = list(Project.objects.filter(workspace=workspace).select_related("production_deployment")
                    .annotate(deployment_count=Count("deployments")).order_by("name"))
    nodes = list(AgentNode.objects.filter(workspace=workspace))
    statuses = Counter(Deployment.objects.filter(project__workspace=workspace).values_list("status", flat=True))
    return {
        "workspace": workspace, "members": members, "projects": projects, "nodes": nodes,
        "counts": {"members": len(members), "projects": len(projects), "nodes": len(nodes),
                   "deployments": deployments["total"], "deployments_last_7_days": deployments["week"],
                   "failed_last_7_days": deployments["failed_week"],
                   "domains": Domain.objects.filter(project__workspace=workspace).count(),
                   "audit_events": AuditEvent.objects.filter(workspace=workspace).count(),
                   "deployments_by_status": dict(sorted(statuses.items()))},
    }
