"""The staff area: incidents staff publish on the status page, and the status probes' samples behind its SLOs
(docs/staff.md)."""
from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("Incident", "IncidentUpdate", "ProbeSample", "ProbeHour")


class Incident(models.Model):
    """Something wrong that staff tell the public about: its impact, the components it touches and where it
    stands; resolved once an update says `resolved`. Its story is its updates, oldest first."""

    class Impact(models.TextChoices):
        MINOR = "minor"
        MAJOR = "major"
        CRITICAL = "critical"

    class Status(models.TextChoices):
        INVESTIGATING = "investigating"
        IDENTIFIED = "identified"
        MONITORING = "monitoring"
        RESOLVED = "resolved"

    id = PrefixedIdField(prefix="inc")
    title = models.CharField(max_length=200)
    impact = models.CharField(max_length=16, choices=Impact.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INVESTIGATING)
    components = models.JSONField(default=list, blank=True, help_text="keys of STATUS_COMPONENTS it affects")
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ("-started_at",)
        constraints = [
            models.CheckConstraint(condition=Q(impact__in=["minor", "major", "critical"]), name="incident_impact"),
            models.CheckConstraint(condition=Q(status__in=["investigating", "identified", "monitoring", "resolved"]),
                                   name="incident_status"),
            # resolved exactly when it has a resolution time
            models.CheckConstraint(condition=Q(status="resolved", resolved_at__isnull=False)
                                   | (~Q(status="resolved") & Q(resolved_at__isnull=True)), name="incident_resolved_at"),
        ]

    def __str__(self):
        return self.title


class IncidentUpdate(models.Model):
    """One step of an incident: the status it moved to and what staff said, in the order written."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="updates")
    status = models.CharField(max_length=16, choices=Incident.Status.choices)
    message = models.TextField(max_length=5000)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at", "id")
        constraints = [models.CheckConstraint(
            condition=Q(status__in=["investigating", "identified", "monitoring", "resolved"]),
            name="incident_update_status")]

    def __str__(self):
        return f"{self.status}: {self.message[:60]}"


class ProbeSample(models.Model):
    """One probe's result for one minute (the minute it ran in): good when it worked within its SLO's
    threshold. Kept STATUS_SAMPLE_RETENTION_HOURS; the hours roll up into ProbeHour."""

    probe = models.CharField(max_length=32, help_text="a key of STATUS_SLOS")
    at = models.DateTimeField(help_text="the minute, truncated")
    good = models.BooleanField()
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    detail = models.CharField(max_length=300, blank=True, help_text="why it was bad, or what it measured")
    ref = models.CharField(max_length=64, blank=True, help_text="what was measured (a code record), once")

    class Meta:
        ordering = ("-at",)
        constraints = [models.UniqueConstraint(fields=["probe", "at"], name="probe_sample_one_per_minute")]

    def __str__(self):
        return f"{self.probe} {self.at:%Y-%m-%d %H:%M} {'good' if self.good else 'bad'}"


class ProbeHour(models.Model):
    """A probe's minute samples of one hour: how many, how many good, the p95 latency. The status page's daily
    bars, the SLO history and the month's error budget read these."""

    probe = models.CharField(max_length=32)
    hour = models.DateTimeField()
    samples = models.PositiveIntegerField(default=0)
    good = models.PositiveIntegerField(default=0)
    p95_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ("-hour",)
        constraints = [models.UniqueConstraint(fields=["probe", "hour"], name="probe_hour_unique"),
                       models.CheckConstraint(condition=Q(good__lte=F("samples")), name="probe_hour_good_le_samples")]

    def __str__(self):
        return f"{self.probe} {self.hour:%Y-%m-%d %H:00} {self.good}/{self.samples}"
