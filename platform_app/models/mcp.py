"""The MCP endpoint's OAuth 2.1 authorization server: clients, authorization codes, tokens (docs/mcp.md)."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("McpClient", "McpAuthorizationCode", "McpToken")


class McpClient(models.Model):
    """An OAuth client an MCP host registered itself as (RFC 7591): the redirect URIs its codes may go to."""

    id = PrefixedIdField(prefix="mcpc")
    name = models.CharField(max_length=200, blank=True)
    redirect_uris = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)


class McpAuthorizationCode(models.Model):
    """A single-use code a user's consent made (kept as a hash), bound to its client, redirect URI, PKCE
    challenge and scopes."""

    code_hash = models.CharField(max_length=64, primary_key=True)
    client = models.ForeignKey(McpClient, on_delete=models.CASCADE, related_name="codes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+")
    redirect_uri = models.CharField(max_length=2000)
    code_challenge = models.CharField(max_length=128)
    scopes = models.JSONField(default=list)
    resource = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)


class McpToken(models.Model):
    """An access token (`mcpa_`) and its refresh token (`mcpr_`), both kept as hashes: they carry scopes and a
    workspace binding exactly like an API token, for the user who consented."""

    id = PrefixedIdField(prefix="mcpt")
    client = models.ForeignKey(McpClient, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+")
    scopes = models.JSONField(default=list)
    access_hash = models.CharField(max_length=64, unique=True)
    refresh_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    refresh_expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)
