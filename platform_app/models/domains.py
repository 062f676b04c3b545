"""Custom domains of projects and their DNS checks."""
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("Domain",)


class RecordType(models.TextChoices):
    """DNS records a domain's verification names and a check reports."""

    TXT = "TXT"
    CNAME = "CNAME"
    A = "A"
    AAAA = "AAAA"


class Domain(models.Model):
    """A host name a project is served at besides `<slug>.DEPLOY_DOMAIN`. While pending, a name is a claim: several
    projects may claim it, and the first to verify takes it (the others' claims are removed). Once verified (or
    misconfigured after that) one project platform-wide holds it (the conditional unique constraint). The edge
    serves it only while `status` is verified (its DNS points at the platform, or the TXT challenge carries
    `verification_token`)."""

    class Status(models.TextChoices):
        PENDING = "pending"              # never verified yet
        VERIFIED = "verified"            # the last check found a record pointing at the platform
        MISCONFIGURED = "misconfigured"  # was verified, a later check found none

    id = PrefixedIdField(prefix="dom")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="domains")
    name = models.CharField(max_length=253, help_text="lower-case ASCII (IDN as punycode)")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    status_changed_at = models.DateTimeField(default=timezone.now)
    verification_token = models.CharField(max_length=64)
    primary = models.BooleanField(default=False, help_text="the project's other domains redirect here (308)")
    redirect_to = models.CharField(max_length=253, blank=True, help_text="another domain of the project (308)")
    git_branch = models.CharField(max_length=200, blank=True,
                                  help_text="serve the latest ready deployment of this branch instead of production")
    verified_at = models.DateTimeField(null=True, blank=True, help_text="first verification")
    last_check_at = models.DateTimeField(null=True, blank=True)
    last_check_found = models.JSONField(default=list, blank=True, help_text='[{"type", "value"}] the last check saw')
    last_check_error = models.CharField(max_length=200, blank=True, help_text="resolver failure of the last check")
    check_failures = models.PositiveIntegerField(default=0, help_text="checks in a row that found nothing (backoff)")
    next_check_at = models.DateTimeField(default=timezone.now, db_index=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("name",)
        constraints = [models.UniqueConstraint(fields=["name"], condition=~models.Q(status="pending"),
                                               name="domain_unique_held_name"),
                       models.UniqueConstraint(fields=["project", "name"], name="domain_unique_project_name"),
                       # what the edge redirects the project's other domains to: at most one
                       models.UniqueConstraint(fields=["project"], condition=models.Q(primary=True),
                                               name="domain_one_primary_per_project")]
        indexes = [models.Index(fields=["project", "-created_at"]),
                   models.Index(fields=["name"], name="domain_name_idx")]  # the edge's lookup, claims included

    def __str__(self):
        return self.name

    @property
    def verified(self) -> bool:
        return self.status == self.Status.VERIFIED
