"""Automation: cron jobs and runs (top), log drains and deliveries, alert rules and alerts (below)."""
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from config.ids import PrefixedIdField

__all__ = ("CronJob", "CronRun", "LogDrain", "LogDrainDelivery", "AlertRule", "Alert")


# Cron ---------------------------------------------------------------------------------------

class CronJob(models.Model):
    """A five-field cron schedule in a timezone that calls a path of the project's deployment through the edge.
    The secret (sent as `x-svc-cron-secret`) is Fernet-encrypted with the env var keys."""

    id = PrefixedIdField(prefix="cron")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="cron_jobs")
    schedule = models.CharField(max_length=120)
    timezone = models.CharField(max_length=64, default="UTC")
    path = models.CharField(max_length=1024)
    branch = models.CharField(max_length=200, blank=True, help_text="blank: the production deployment")
    enabled = models.BooleanField(default=True)
    retries = models.PositiveSmallIntegerField(default=0, help_text="further attempts after a failed call")
    secret_encrypted = models.TextField()
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self):
        return f"{self.project}:{self.schedule} {self.path}"


class CronRun(models.Model):
    """One due minute of a job. The unique (job, scheduled_for) row is the once-per-minute guarantee: a second
    beat process that tries to insert the same minute gets an IntegrityError and does nothing."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        SKIPPED = "skipped"

    id = PrefixedIdField(prefix="crr")
    job = models.ForeignKey(CronJob, on_delete=models.CASCADE, related_name="runs")
    scheduled_for = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_head = models.TextField(blank=True, help_text="the first KiB of the response body")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-scheduled_for",)
        constraints = [models.UniqueConstraint(fields=["job", "scheduled_for"], name="cron_run_once_per_minute")]
        indexes = [models.Index(fields=["job", "-scheduled_for"])]


# Log drains ---------------------------------------------------------------------------------

class LogDrain(models.Model):
    """An HTTPS endpoint that receives a project's log lines in signed batches. Cursors are the last delivered
    line id per source table; a drain that keeps failing is paused."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"

    class Format(models.TextChoices):
        JSON = "json"
        NDJSON = "ndjson"

    id = PrefixedIdField(prefix="drn")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="log_drains")
    url = models.CharField(max_length=2048)
    format = models.CharField(max_length=8, choices=Format.choices, default=Format.JSON)
    sources = models.JSONField(default=list)
    environments = models.JSONField(default=list, blank=True, help_text="empty: every environment")
    sampling_rate = models.FloatField(default=1.0)
    secret_encrypted = models.TextField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    failures = models.PositiveIntegerField(default=0, help_text="consecutive failed deliveries")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, help_text="a worker is delivering until then")
    build_cursor = models.BigIntegerField(default=0, help_text="last delivered LogLine id")
    runtime_cursor = models.BigIntegerField(default=0, help_text="last delivered RuntimeLogLine id")
    firewall_cursor = models.BigIntegerField(default=0, help_text="last delivered FirewallEvent id")
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self):
        return f"{self.project}:{self.url}"


class LogDrainDelivery(models.Model):
    """One attempt to deliver a batch (or a test message) to a drain."""

    drain = models.ForeignKey(LogDrain, on_delete=models.CASCADE, related_name="deliveries")
    at = models.DateTimeField(default=now)
    lines = models.PositiveIntegerField(default=0)
    test = models.BooleanField(default=False)
    delivered = models.BooleanField(default=False)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ("-at", "-pk")
        verbose_name_plural = "log drain deliveries"


# Alerts -------------------------------------------------------------------------------------

class AlertRule(models.Model):
    """A metric of a project compared with a threshold over a window; notifies its channels when it fires and
    when it resolves."""

    class Metric(models.TextChoices):
        DEPLOYMENT_FAILED = "deployment_failed"
        BUILD_DURATION = "build_duration"
        EDGE_5XX_RATE = "edge_5xx_rate"
        EDGE_P95_LATENCY = "edge_p95_latency"
        CRON_FAILED = "cron_failed"
        INSTANCE_DOWN = "instance_down"
        DOMAIN_MISCONFIGURED = "domain_misconfigured"
        USAGE_CAP = "usage_cap"

    class State(models.TextChoices):
        OK = "ok"
        FIRING = "firing"

    id = PrefixedIdField(prefix="alr")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="alert_rules")
    name = models.CharField(max_length=100)
    metric = models.CharField(max_length=32, choices=Metric.choices)
    threshold = models.FloatField()
    window_minutes = models.PositiveIntegerField(default=5)
    channels = models.JSONField(default=list)
    secret_encrypted = models.TextField(help_text="signs webhook notifications")
    state = models.CharField(max_length=8, choices=State.choices, default=State.OK)
    last_value = models.FloatField(null=True, blank=True)
    last_evaluated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self):
        return f"{self.project}:{self.name}"


class Alert(models.Model):
    """One firing of a rule, open until resolved; at most one open alert per rule (the partial unique
    constraint is the de-duplication)."""

    id = PrefixedIdField(prefix="alt")
    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    value = models.FloatField(null=True, blank=True)
    source = models.CharField(max_length=16, default="evaluation", help_text="evaluation or fire (internal route)")
    message = models.TextField(blank=True)
    fired_at = models.DateTimeField(default=now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    notifications = models.JSONField(default=list, blank=True,
                                     help_text="what was sent: kind, channel, target, ok, error, at")

    class Meta:
        ordering = ("-fired_at",)
        constraints = [models.UniqueConstraint(fields=["rule"], condition=Q(resolved_at__isnull=True),
                                               name="alert_one_open_per_rule")]
