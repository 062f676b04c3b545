"""Deployments: one build of a project at a branch, and what serves it."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

# A deployment nodes run (a start command or an image) rather than files the edge serves: agents.is_runtime in
# SQL. A build's snapshot always names `start`, empty (or null) for a static site.
RUNS_ON_NODES = (models.Q(snapshot__has_key="start") & ~models.Q(snapshot__start="") & ~models.Q(snapshot__start=None)
                 | models.Q(snapshot__has_key="imageDigest"))

__all__ = ("SourceUpload", "Deployment", "DeploymentEvent", "LogLine", "DeployHook", "WebhookDelivery", "DoctorReport", "AgentInvite",
           "AgentNode", "Instance", "RuntimeLogLine", "BuildJob")


class SourceUpload(models.Model):
    """A folder sent as a tar.gz to be built (`svc deploy`): checked like a Git checkout, kept in artifact storage
    once per content (SHA-256) and project."""

    id = PrefixedIdField(prefix="src")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="source_uploads")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    files = models.IntegerField()
    storage_name = models.CharField(max_length=300)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)
        constraints = [models.UniqueConstraint(fields=["project", "sha256"], name="source_upload_once")]

    def __str__(self):
        return f"{self.sha256[:12]} ({self.files} files)"


class Deployment(models.Model):
    """A build and its artifact. States: queued → building → deploying → ready | error | canceled."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        BUILDING = "building"
        DEPLOYING = "deploying"
        READY = "ready"
        ERROR = "error"
        CANCELED = "canceled"

    class Trigger(models.TextChoices):
        MANUAL = "manual"
        API = "api"
        HOOK = "hook"
        GIT = "git"

    id = PrefixedIdField(prefix="dpl")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="deployments")
    env = models.CharField(max_length=64, default="preview", help_text="environment name")
    branch = models.CharField(max_length=200)
    commit_sha = models.CharField(max_length=64, blank=True)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.MANUAL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error_message = models.TextField(blank=True)
    created_by = models.ForeignKey("platform_app.User", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    framework = models.CharField(max_length=32, blank=True)
    artifact_path = models.CharField(max_length=500, blank=True, help_text="folder under ARTIFACT_ROOT")
    artifact_sha256 = models.CharField(max_length=64, blank=True, help_text="of the archive in artifact storage")
    artifact_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    source_upload = models.ForeignKey(SourceUpload, null=True, blank=True, on_delete=models.RESTRICT,
                                      related_name="deployments", help_text="What an upload project built.")
    snapshot = models.JSONField(default=dict, blank=True,
                                help_text="what it was built with: commit, commands, env var names and value hash")
    log_archive = models.CharField(max_length=300, blank=True,
                                   help_text="its build log in artifact storage (gzip JSON lines), once archived")
    log_lines_archived = models.PositiveIntegerField(default=0, help_text="the last sequence number it holds")
    log_expired_at = models.DateTimeField(null=True, blank=True, help_text="its log was deleted (LOG_RETENTION_DAYS)")
    idempotency_key = models.CharField(max_length=100, null=True, blank=True,
                                       help_text="a retried trigger with the same key returns this deployment")
    component = models.ForeignKey("platform_app.Component", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="deployments", help_text="built for this component's deploy")

    class Meta:
        ordering = ("-created_at",)
        indexes = [
            models.Index(fields=["project", "-created_at"]),
            # the beat's archive and retention sweeps (services/deployments/log_archive.py): each reads only the
            # logs it has left to do, not every deployment ever finished
            models.Index(fields=["finished_at"], name="deployment_log_unarchived",
                         condition=models.Q(log_archive="", log_expired_at__isnull=True)),
            models.Index(fields=["finished_at"], name="deployment_log_unexpired",
                         condition=models.Q(log_expired_at__isnull=True)),
            # metering (services/billing/metering.py): the builds of an hour, those still running (NULL) included
            models.Index(fields=["finished_at"], name="deployment_finished"),
            # placement, at every node's heartbeat (services/agents/agents.py `_wanted`): the ready deployments
            # nodes run, not every static one a workspace ever built
            models.Index(fields=["project", "-ready_at"], name="deployment_runtime_ready",
                         condition=models.Q(status="ready", component__isnull=True) & RUNS_ON_NODES),
        ]
        constraints = [models.UniqueConstraint(fields=["project", "idempotency_key"],
                                               name="deployment_unique_idempotency_key")]

    def __str__(self):
        return self.id

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.READY, self.Status.ERROR, self.Status.CANCELED)


class DeploymentEvent(models.Model):
    """One state change of a deployment (queued, building, ready, error, canceled, ...)."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=32)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at", "pk")


class LogLine(models.Model):
    """Append-only build output: never rewritten, so a failed build's whole log stays readable."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="log_lines")
    seq = models.PositiveIntegerField()
    stream = models.CharField(max_length=8, default="build")
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("seq",)
        constraints = [models.UniqueConstraint(fields=["deployment", "seq"], name="log_line_unique_seq")]


class DeployHook(models.Model):
    """A URL that deploys a branch when called; its secret is stored only as a hash."""

    id = PrefixedIdField(prefix="hook")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="deploy_hooks")
    name = models.CharField(max_length=100)
    branch = models.CharField(max_length=200)
    secret_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_triggered_at = models.DateTimeField(null=True, blank=True)
    last_deployment = models.ForeignKey(Deployment, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                        help_text="the hook's newest build: while it is queued, calls are 429")

    class Meta:
        ordering = ("-created_at",)


class WebhookDelivery(models.Model):
    """A code host's delivery id, stored once: a redelivered push is acknowledged and not deployed twice."""

    provider = models.CharField(max_length=16)
    delivery_id = models.CharField(max_length=100)
    event = models.CharField(max_length=64)
    received_at = models.DateTimeField(default=timezone.now)
    deployments = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "delivery_id"], name="webhook_delivery_unique")]
        verbose_name_plural = "webhook deliveries"


class DoctorReport(models.Model):
    """Findings of the build doctor for one failed deployment."""

    id = PrefixedIdField(prefix="doc")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="doctor_reports")
    findings = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    pull_request_url = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ("-created_at",)


class AgentInvite(models.Model):
    """A single-use token to join a node to a workspace (or, without one, to the platform: a builder that builds
    for every workspace); stored as a hash."""

    id = PrefixedIdField(prefix="ainv")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="agent_invites",
                                  null=True, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey("platform_app.User", null=True, on_delete=models.SET_NULL, related_name="+")
    by_operator = models.BooleanField(default=False, help_text="made on the server by its operator (manage.py "
                                                               "agent --local, node_invite): the node's address is "
                                                               "the operator's choice, not a tenant's")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)


class AgentNode(models.Model):
    """A machine running a node (`python -m platform_app.nodes`): it heartbeats, runs assigned deployments and
    reports instances (capability `process`), and claims builds (`build`). A node of no workspace is the
    platform's own: it builds for every workspace."""

    class Status(models.TextChoices):
        ONLINE = "online"
        OFFLINE = "offline"
        DRAINING = "draining"
        LEFT = "left"

    id = PrefixedIdField(prefix="node")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="agent_nodes",
                                  null=True, blank=True)
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    host = models.CharField(max_length=200, default="127.0.0.1", help_text="address the edge reaches instances at")
    by_operator = models.BooleanField(default=False, help_text="joined with an operator's invite (a platform node's "
                                                               "always is): reached directly, loopback included; "
                                                               "any other node only through the outbound guard")
    runtimes = models.JSONField(default=list, help_text="capabilities: process, container, build")
    capacity = models.PositiveIntegerField(default=4, help_text="instances it accepts")
    sandbox = models.JSONField(default=dict, blank=True, help_text="what its sandbox enforces, as it reported")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ONLINE)
    last_heartbeat_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("name",)


class Instance(models.Model):
    """One running copy of a deployment on a node: assigned → starting → running → stopping → stopped (or lost,
    failed, crashed). A component's instance runs its start command and size; `running` means healthy."""

    id = PrefixedIdField(prefix="inst")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="instances")
    node = models.ForeignKey(AgentNode, on_delete=models.CASCADE, related_name="instances")
    component = models.ForeignKey("platform_app.Component", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="running_instances")
    restarts = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, default="assigned")
    port = models.PositiveIntegerField(null=True, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    memory_peak_bytes = models.PositiveBigIntegerField(null=True, blank=True,
                                                       help_text="highest memory its sandbox used, as the node reported")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)


class RuntimeLogLine(models.Model):
    """A line a running instance printed, forwarded by its agent."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="runtime_lines")
    instance_id = models.CharField(max_length=40, blank=True)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("pk",)


class BuildJob(models.Model):
    """A build handed to a builder: pending until one claims it (its token is made then, shown once, kept as a
    hash), done when the builder finishes. The builder's calls renew the build's lease."""

    class State(models.TextChoices):
        PENDING = "pending"
        CLAIMED = "claimed"
        DONE = "done"

    deployment = models.OneToOneField(Deployment, on_delete=models.CASCADE, primary_key=True, related_name="build_job")
    spec = models.JSONField(help_text="commands, limits, network; variables are resolved when claimed")
    source = models.CharField(max_length=300, help_text="the source archive's name in artifact storage")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING, db_index=True)
    node = models.ForeignKey(AgentNode, null=True, blank=True, on_delete=models.SET_NULL, related_name="build_jobs")
    token_hash = models.CharField(max_length=64, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    fetched_at = models.DateTimeField(null=True, blank=True, help_text="when its builder fetched the source")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("created_at",)
