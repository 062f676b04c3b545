"""The edge: firewall rules and events, web analytics events and rollups."""
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("FirewallRule", "FirewallEvent", "AnalyticsSettings", "AnalyticsEvent", "AnalyticsVisitor",
           "AnalyticsVitalHour")


class FirewallRule(models.Model):
    """One rule of a project's firewall. The edge tries enabled rules by ascending priority; the first whose
    conditions all match decides (allow, deny, challenge, or rate_limit per client address)."""

    class Action(models.TextChoices):
        ALLOW = "allow"
        DENY = "deny"
        CHALLENGE = "challenge"
        RATE_LIMIT = "rate_limit"

    id = PrefixedIdField(prefix="fwr")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="firewall_rules")
    name = models.CharField(max_length=100)
    priority = models.IntegerField(default=100, help_text="lower runs first")
    enabled = models.BooleanField(default=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    conditions = models.JSONField(default=list, blank=True,
                                  help_text='[{"field": "ip|path|method|header|user_agent", "op": '
                                            '"eq|prefix|glob|cidr|contains", "value": "...", "name": "header"}]')
    rate_limit_requests = models.PositiveIntegerField(null=True, blank=True)
    rate_limit_window_seconds = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("priority", "created_at")
        indexes = [models.Index(fields=["project", "priority"], name="firewall_rule_project")]

    def __str__(self):
        return f"{self.project_id}:{self.name}"


class FirewallEvent(models.Model):
    """A request the firewall blocked, challenged or rate-limited. Kept FIREWALL_EVENT_RETENTION_HOURS."""

    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="firewall_events")
    rule_id = models.CharField(max_length=32, help_text="the rule's id (it may have been deleted since)")
    action = models.CharField(max_length=16)
    ip = models.CharField(max_length=45)
    method = models.CharField(max_length=16)
    path = models.CharField(max_length=512)
    user_agent = models.CharField(max_length=512, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-at", "-id")
        indexes = [models.Index(fields=["project", "at"], name="firewall_event_project_at"),
                   models.Index(fields=["at"], name="firewall_event_at")]

    def __str__(self):
        return f"{self.action} {self.ip} {self.path}"


class AnalyticsSettings(models.Model):
    """Whether the edge injects the analytics script into a project's pages (and the beacon accepts events)."""

    project = models.OneToOneField("platform_app.Project", on_delete=models.CASCADE, primary_key=True,
                                   related_name="analytics_settings")
    enabled = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "analytics settings"

    def __str__(self):
        return f"{self.project_id}: {'on' if self.enabled else 'off'}"


class AnalyticsEvent(models.Model):
    """A beacon as received, until the hourly roll-up folds it into visitor and vitals rows. `visitor` is a
    hash of address, user agent and project with a salt that changes daily and is never stored."""

    class Type(models.TextChoices):
        PAGEVIEW = "pageview"
        VITAL = "vital"

    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="analytics_events")
    type = models.CharField(max_length=8, choices=Type.choices)
    path = models.CharField(max_length=512)
    referrer = models.CharField(max_length=253, blank=True, help_text="the referring host name only")
    name = models.CharField(max_length=8, blank=True, help_text="vital: LCP, INP, CLS, TTFB, FCP")
    value = models.FloatField(null=True, blank=True)
    visitor = models.CharField(max_length=32)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["project", "at"], name="analytics_event_project_at"),
                   models.Index(fields=["at"], name="analytics_event_at")]

    def __str__(self):
        return f"{self.type} {self.path}"


class AnalyticsVisitor(models.Model):
    """One visitor of one project on one (UTC) day: page views by path, the first referrer and whether the
    visit bounced (one page view). Written by the roll-up."""

    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="analytics_visitors")
    day = models.DateField()
    visitor = models.CharField(max_length=32)
    page_views = models.PositiveIntegerField(default=0)
    paths = models.JSONField(default=dict, help_text="{path: page views}")
    referrer = models.CharField(max_length=253, blank=True)
    first_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "day", "visitor"], name="analytics_visitor_unique")]
        indexes = [models.Index(fields=["project", "day"], name="analytics_visitor_day")]

    def __str__(self):
        return f"{self.project_id} {self.day} {self.visitor}"


class AnalyticsVitalHour(models.Model):
    """Web Vitals samples of one hour, metric and path, as a histogram of rounded values ({value: count})."""

    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="analytics_vitals")
    hour = models.DateTimeField()
    path = models.CharField(max_length=512)
    name = models.CharField(max_length=8)
    histogram = models.JSONField(default=dict)
    samples = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "hour", "path", "name"],
                                               name="analytics_vital_unique")]
        indexes = [models.Index(fields=["project", "hour"], name="analytics_vital_hour")]

    def __str__(self):
        return f"{self.project_id} {self.hour} {self.name} {self.path}"
