"""Resources a project runs with: add-ons on shared servers, components (its services) and their volumes."""
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("Addon", "Component", "Volume")


class Addon(models.Model):
    """A PostgreSQL database or a Redis key space on the platform's shared server, for one project. Its
    credentials are stored encrypted and reach builds and instances only as managed variables."""

    class Kind(models.TextChoices):
        POSTGRES = "postgres"
        REDIS = "redis"

    class Status(models.TextChoices):
        PROVISIONING = "provisioning"
        READY = "ready"
        ERROR = "error"
        DELETED = "deleted"  # its variables are gone; the server keeps the data for the grace period

    id = PrefixedIdField(prefix="add")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="addons")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=40, help_text="prefixes its variables when the project has several")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROVISIONING)
    error_message = models.CharField(max_length=500, blank=True)
    credentials_encrypted = models.TextField(blank=True, help_text="host, port, user, password, database or prefix")
    created_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)
    purged_at = models.DateTimeField(null=True, blank=True, help_text="when its database or keys were dropped")

    class Meta:
        ordering = ("created_at",)
        constraints = [models.UniqueConstraint(fields=["project", "name"], condition=models.Q(deleted_at__isnull=True),
                                               name="addon_unique_live_name")]


class Component(models.Model):
    """One service of a project (a web server, a worker, static files), with its own start command, instance
    size and count, deployed on its own: it runs `deployment` on the workspace's agents."""

    class Kind(models.TextChoices):
        WEB = "web"
        WORKER = "worker"
        STATIC = "static"

    id = PrefixedIdField(prefix="cmp")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="components")
    name = models.CharField(max_length=30)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    start_command = models.CharField(max_length=1000, blank=True)
    build_command = models.CharField(max_length=1000, blank=True, help_text="instead of the project's, when set")
    instance_size = models.CharField(max_length=32)
    instances = models.PositiveIntegerField(default=1)
    health_check_path = models.CharField(max_length=200, blank=True)
    deployment = models.ForeignKey("platform_app.Deployment", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="what it runs (the last ready deploy of it)")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at",)
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="component_unique_name")]

    def __str__(self):
        return f"{self.project_id}/{self.name}"


class Volume(models.Model):
    """A folder on an agent node mounted into a component's sandbox at `mount_path`; it survives restarts and
    pins the component to its node."""

    id = PrefixedIdField(prefix="vol")
    component = models.ForeignKey(Component, on_delete=models.CASCADE, related_name="volumes")
    name = models.CharField(max_length=40)
    mount_path = models.CharField(max_length=200)
    size_gb = models.PositiveIntegerField()
    used_bytes = models.PositiveBigIntegerField(default=0)
    node = models.ForeignKey("platform_app.AgentNode", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="volumes", help_text="where its folder is, once first placed")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at",)
        constraints = [models.UniqueConstraint(fields=["component", "name"], name="volume_unique_name"),
                       models.UniqueConstraint(fields=["component", "mount_path"], name="volume_unique_mount")]
