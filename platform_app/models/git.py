"""Git provider connections, app installations, linked identities and OAuth states."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("OAuthState", "GitConnection", "GitInstallation", "LinkedIdentity")


class OAuthState(models.Model):
    """One started OAuth/OIDC flow. The `state` sent out is signed; its hash is stored so it is used once."""

    id = PrefixedIdField(prefix="ost")
    purpose = models.CharField(max_length=16, help_text="signin, connect, install or link")
    provider = models.CharField(max_length=16)
    state_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+")
    return_to = models.CharField(max_length=500, blank=True)
    code_verifier = models.CharField(max_length=128, blank=True)
    nonce = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "OAuth state"


class GitConnection(models.Model):
    """A workspace's access to one code host; the token is Fernet-encrypted and never returned."""

    id = PrefixedIdField(prefix="gitc")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="git_connections")
    provider = models.CharField(max_length=16)
    account = models.CharField(max_length=200, blank=True)
    token_encrypted = models.TextField(blank=True)
    installation_id = models.CharField(max_length=40, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "provider"], name="git_connection_unique")]


class GitInstallation(models.Model):
    """A git-a app installation; unclaimed until a workspace claims it."""

    installation_id = models.CharField(max_length=40, unique=True)
    account = models.CharField(max_length=200, blank=True)
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="git_installations")
    created_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)


class LinkedIdentity(models.Model):
    """A user's account at an outside provider (social sign-in, user link)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="linked_identities")
    provider = models.CharField(max_length=16)
    subject = models.CharField(max_length=200)
    email = models.EmailField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "subject"], name="linked_identity_unique")]
        verbose_name_plural = "linked identities"
