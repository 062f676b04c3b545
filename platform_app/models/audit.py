"""The workspace audit log: append-only, written by services."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("AuditEvent",)


class AuditEvent(models.Model):
    """Who did what to which object in a workspace (tokens, members, reveals, ...)."""

    id = PrefixedIdField(prefix="aud")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    action = models.CharField(max_length=64, help_text="dotted verb, e.g. api_token.created")
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict, blank=True)
    ip = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["workspace", "-created_at"])]

    def __str__(self):
        return f"{self.action} {self.target_type}:{self.target_id}"
