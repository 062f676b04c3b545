"""Workspaces (`orgs` in paths) and their members."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField
from platform_app.choices import Role

__all__ = ("Workspace", "Membership", "AnswerStamp")


class Workspace(models.Model):
    """A team: owns projects, tokens, billing. Addressed by id or slug."""

    id = PrefixedIdField(prefix="org")
    slug = models.SlugField(max_length=48, unique=True)
    name = models.CharField(max_length=100)
    plan = models.CharField(max_length=32, default="free", help_text="a key of PLANS (settings)")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="workspaces")

    class Meta:
        ordering = ("name",)

    def __str__(self):
        return self.slug


class Membership(models.Model):
    """A user's role in one workspace."""

    id = PrefixedIdField(prefix="mem")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at",)
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user")]

    def __str__(self):
        return f"{self.user} in {self.workspace} ({self.role})"


class AnswerStamp(models.Model):
    """A count of the committed changes to what a workspace's kept API answers show (platform_app/api/kept.py).

    Only database triggers write it (migration 0037): every insert, update or delete of a project, deployment,
    deployment event, environment variable or variable slot moves its workspace's count, whichever code made the
    change (`QuerySet.update` and raw SQL included); on PostgreSQL once per transaction, at commit. No foreign key:
    a workspace deleted with its projects leaves its count behind instead of failing the trigger that moves it."""

    workspace_id = models.CharField(max_length=40, primary_key=True)
    version = models.BigIntegerField(default=0)
    xact = models.BigIntegerField(null=True, help_text="the last transaction that moved it (PostgreSQL)")

    def __str__(self):
        return f"{self.workspace_id}@{self.version}"
