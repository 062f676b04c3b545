"""Personal API tokens (`svc_...`), stored only as a SHA-256 hash."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("ApiToken",)


class ApiToken(models.Model):
    """A bearer token acting for its owner, limited by scopes and optionally one workspace."""

    id = PrefixedIdField(prefix="tok")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="api_tokens", help_text="Empty: all of the owner's workspaces.")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise the token.")
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["user", "revoked_at"])]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"
