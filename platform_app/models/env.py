"""Environments, environment variables (encrypted at rest), secret findings, preview protection."""
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("Environment", "EnvVar", "EnvVarSlot", "SecretFinding", "PreviewProtection")

BUILTIN_ENVIRONMENTS = ("production", "preview", "development")


class Environment(models.Model):
    """A deployment target of a project: the three built-ins, or a custom one with a branch pattern."""

    id = PrefixedIdField(prefix="env")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="environments")
    name = models.SlugField(max_length=64)
    branch_pattern = models.CharField(max_length=200, blank=True, help_text="e.g. release/* (fnmatch)")
    builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-builtin", "name")
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="environment_unique_name")]

    def __str__(self):
        return f"{self.project}:{self.name}"


class EnvVar(models.Model):
    """One variable for one or more targets, optionally only for one branch. The value is Fernet-encrypted."""

    class Type(models.TextChoices):
        PLAIN = "plain"
        SECRET = "secret"

    id = PrefixedIdField(prefix="ev")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="env_vars")
    key = models.CharField(max_length=256)
    value_encrypted = models.TextField()
    type = models.CharField(max_length=8, choices=Type.choices, default=Type.PLAIN)
    targets = models.JSONField(default=list)
    branch = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("key", "created_at")

    def __str__(self):
        return f"{self.project}:{self.key}"


class EnvVarSlot(models.Model):
    """One (key, target, branch) a variable occupies: the unique constraint is what refuses a second
    variable with the same key for the same target and branch."""

    env_var = models.ForeignKey(EnvVar, on_delete=models.CASCADE, related_name="slots")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=256)
    target = models.CharField(max_length=64)
    branch = models.CharField(max_length=200, default="", help_text="empty: every branch")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "key", "target", "branch"], name="env_slot_unique")]


class SecretFinding(models.Model):
    """A secret committed to the repository (or printed in a build log). Only a redacted preview is kept."""

    id = PrefixedIdField(prefix="sf")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="secret_findings")
    fingerprint = models.CharField(max_length=64)
    rule = models.CharField(max_length=64)
    file = models.CharField(max_length=500)
    line = models.PositiveIntegerField()
    preview = models.CharField(max_length=120)
    commit_sha = models.CharField(max_length=64, blank=True)
    deployment_id = models.CharField(max_length=40, blank=True)
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    ignored_at = models.DateTimeField(null=True, blank=True)
    imported_at = models.DateTimeField(null=True, blank=True)
    imported_as = models.CharField(max_length=256, blank=True)

    class Meta:
        ordering = ("-last_seen_at",)
        constraints = [models.UniqueConstraint(fields=["project", "fingerprint"], name="secret_finding_unique")]


class PreviewProtection(models.Model):
    """Who may view a project's preview deployments."""

    class Mode(models.TextChoices):
        OFF = "off"
        PASSWORD = "password"
        MEMBERS = "members"

    project = models.OneToOneField("platform_app.Project", on_delete=models.CASCADE, related_name="preview_protection")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.OFF)
    password_hash = models.CharField(max_length=200, blank=True)
    password_version = models.PositiveIntegerField(
        default=0, help_text="signed into visitors' cookies; a new password or leaving password mode bumps it")
    updated_at = models.DateTimeField(default=timezone.now)
