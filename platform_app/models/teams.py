"""Invitations to join a workspace."""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.ids import PrefixedIdField
from platform_app.choices import Role

__all__ = ("Invitation",)


class Invitation(models.Model):
    """An emailed offer to join a workspace with a role: 7 days, single use.

    Only the SHA-256 of the token is stored; the accept link carries the plain token.
    `status` is stored (not computed) so the database can allow one pending invitation
    per address and workspace; expiry is read from `expires_at`.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        DECLINED = "declined"
        REVOKED = "revoked"

    id = PrefixedIdField(prefix="inv")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["email", "status"])]
        constraints = [
            # One open invitation per address and workspace; a new one revokes the old.
            models.UniqueConstraint(fields=["workspace", "email"], condition=Q(status="pending"),
                                    name="invitation_one_pending_per_email"),
        ]

    def __str__(self):
        return f"{self.email} → {self.workspace} ({self.status})"

    @property
    def is_expired(self) -> bool:
        return timezone.now() >= self.expires_at
