"""What each alert metric measures for a project over the last `minutes` minutes. Every function returns
(value, note): value None means there is nothing to measure (no traffic, or a table this platform does not
have yet), and the note says so; a rule fires when value >= threshold (docs/automation.md)."""
from datetime import timedelta

from django.db.models import Q

from platform_app.models import CronRun, Deployment, Domain
from platform_app.services.agents.agents import is_runtime, running_instance
from platform_app.services.automation import edge_metrics
from platform_app.services.billing.caps import usage_cap_percent

COUNT_METRICS = ("deployment_failed", "cron_failed", "instance_down", "domain_misconfigured")
UNITS = {"deployment_failed": "failed deployments", "build_duration": "s", "edge_5xx_rate": "% 5xx",
         "edge_p95_latency": "ms", "cron_failed": "failed cron runs", "instance_down": "production instances down",
         "domain_misconfigured": "misconfigured domains", "usage_cap": "% of the usage cap"}


def deployment_failed(project, since, now):
    failed = Deployment.objects.filter(project=project, status=Deployment.Status.ERROR).filter(
        Q(finished_at__gte=since) | Q(finished_at__isnull=True, created_at__gte=since))
    return float(failed.count()), ""


def build_duration(project, since, now):
    rows = (Deployment.objects.filter(project=project, started_at__isnull=False, finished_at__gte=since)
            .values_list("started_at", "finished_at"))
    durations = [(end - start).total_seconds() for start, end in rows]
    return (max(durations), "") if durations else (None, "No build finished in the window.")


def _edge(project, minutes, now):
    return edge_metrics.window(project.pk, minutes, now=now.timestamp())


def edge_5xx_rate(project, since, now, minutes=5):
    counts = _edge(project, minutes, now)
    if not counts["requests"]:
        return None, "No request reached the edge in the window."
    return round(100.0 * counts["errors"] / counts["requests"], 2), ""


def edge_p95_latency(project, since, now, minutes=5):
    value = edge_metrics.p95_ms(_edge(project, minutes, now)["buckets"])
    return (value, "") if value is not None else (None, "No request reached the edge in the window.")


def cron_failed(project, since, now):
    return float(CronRun.objects.filter(job__project=project, status=CronRun.Status.FAILED,
                                        finished_at__gte=since).count()), ""


def instance_down(project, since, now):
    """1 when the production deployment runs on agents and no instance of it runs on an online node."""
    deployment = project.production_deployment
    if deployment is None or deployment.status != Deployment.Status.READY or not is_runtime(deployment):
        return 0.0, "The production deployment does not run on agents."
    return (0.0 if running_instance(deployment) is not None else 1.0), ""


def domain_misconfigured(project, since, now):
    """Domains whose DNS check found records that no longer point at the platform (a state, not a window)."""
    return float(Domain.objects.filter(project=project, status=Domain.Status.MISCONFIGURED).count()), ""


def usage_cap(project, since, now):
    """% of the workspace's monthly usage cap spent this period (a state, not events in the window)."""
    percent = usage_cap_percent(workspace=project.workspace_id, now=now)
    return (percent, "") if percent is not None else (None, "The workspace has no usage cap.")


MEASURES = {"deployment_failed": deployment_failed, "build_duration": build_duration, "edge_5xx_rate": edge_5xx_rate,
            "edge_p95_latency": edge_p95_latency, "cron_failed": cron_failed, "instance_down": instance_down,
            "domain_misconfigured": domain_misconfigured, "usage_cap": usage_cap}


def measure(metric: str, project, minutes: int, now) -> tuple[float | None, str]:
    since = now - timedelta(minutes=minutes)
    fn = MEASURES[metric]
    if metric.startswith("edge_"):
        return fn(project, since, now, minutes=minutes)
    return fn(project, since, now)
