"""Graduation: a project exported as a signed bundle with a one-time redeem code, and the redemptions that
made projects from such bundles (docs/graduation.md)."""
from django.conf import settings
from django.db import models
from django.utils.timezone import now

from config.ids import PrefixedIdField

__all__ = ("Graduation", "GraduationRedemption")


class Graduation(models.Model):
    """One export of a project. The redeem code is kept only as its SHA-256; the bundle it seals is kept until
    it expires (a purge then empties it, the row stays so a late redeem is told it expired)."""

    id = PrefixedIdField(prefix="grd")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="graduations")
    project = models.ForeignKey("platform_app.Project", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="graduations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    code_hash = models.CharField(max_length=64, unique=True)
    bundle = models.TextField(blank=True, help_text="emptied once expired")
    bundle_sha256 = models.CharField(max_length=64)
    expires_at = models.DateTimeField()
    redeemed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self):
        return self.id


class GraduationRedemption(models.Model):
    """A bundle redeemed on this platform (made here or on another instance). The unique bundle id is the
    single-use guarantee: a second redemption of the same bundle cannot insert its row."""

    id = PrefixedIdField(prefix="grr")
    bundle_id = models.CharField(max_length=40, unique=True, help_text="the export's id (`grd_...`)")
    origin = models.CharField(max_length=500, help_text="SITE_URL of the platform that made the bundle")
    graduation = models.ForeignKey(Graduation, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="redemptions", help_text="the export, when it was made here")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("platform_app.Project", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    redeemed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    redeemed_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-redeemed_at",)

    def __str__(self):
        return self.bundle_id
