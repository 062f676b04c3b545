"""Personal API tokens (`svc_...`), stored only as a SHA-256 hash."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("ApiToken", "DeviceAuthorization")


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


class DeviceAuthorization(models.Model):
    """A device's request for a token (RFC 8628, `svc login`): a signed-in user approves or denies it on
    `/device` by its user code; the device then polls with its device code and receives a new API token once.
    Both codes are kept as hashes."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DENIED = "denied"
        USED = "used"

    device_code_hash = models.CharField(max_length=64, primary_key=True)
    user_code_hash = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=40)
    scopes = models.JSONField(default=list, help_text="What the device asked for.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+", help_text="Who decided.")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+", help_text="The token's binding, if the user chose one.")
    granted_scopes = models.JSONField(default=list)
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    polled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="device_auth_expires")]

    def __str__(self):
        return f"{self.client_id} ({self.status})"
