"""Money (docs/billing.md): the price book, hourly usage records, each workspace's billing account with the
payments provider, its invoices and tax ids, the provider's webhook events, and preview deployments' visits."""
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("Price", "UsageRecord", "BillingAccount", "Invoice", "TaxId", "PaymentEvent", "DeploymentVisit")


class Price(models.Model):
    """One meter's price for a span of time: `unit_amount` minor units of `currency` per `unit_size` base units of
    the meter (seconds, requests, bytes, byte-hours). Usage of an hour is priced by the row valid then; a meter
    without a row for that hour is priced from BILLING_PRICES (settings), which also seeds missing meters."""

    id = PrefixedIdField(prefix="prc")
    meter = models.CharField(max_length=64, db_index=True,
                             help_text="build_seconds, edge_requests, edge_bytes, instance_seconds:<size>, "
                                       "storage_artifacts, storage_volumes")
    unit_amount = models.PositiveIntegerField(help_text="minor units of the currency per unit_size")
    unit_size = models.PositiveBigIntegerField(help_text="base units of the meter the amount is for (e.g. 60 s)")
    unit_label = models.CharField(max_length=100, blank=True, help_text="what unit_size is, for people")
    currency = models.CharField(max_length=3)
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True, help_text="empty: until further notice")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("meter", "-valid_from")
        constraints = [
            models.CheckConstraint(condition=Q(unit_size__gt=0), name="price_unit_size_positive"),
            models.CheckConstraint(condition=Q(valid_until__isnull=True) | Q(valid_until__gt=F("valid_from")),
                                   name="price_valid_span"),
            models.UniqueConstraint(fields=["meter", "valid_from"], name="price_unique_meter_start"),
        ]

    def __str__(self):
        return f"{self.meter}: {self.unit_amount} {self.currency} / {self.unit_size}"


class UsageRecord(models.Model):
    """What one project of a workspace used of one meter during one hour (UTC), in the meter's base unit. Written
    by the metering task from what the platform already knows; one row per (workspace, project, hour, meter), so
    running it again never counts twice. `project_ref` keeps the project's id after the project is deleted."""

    # indexed below, not each on its own: every index is written by each of the metering's many inserts
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="usage_records",
                                  db_index=False)
    project = models.ForeignKey("platform_app.Project", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="usage_records", db_index=False)
    project_ref = models.CharField(max_length=40, help_text="the project's id, kept when it is deleted")
    project_name = models.CharField(max_length=100, blank=True)
    hour = models.DateTimeField(help_text="start of the hour, UTC")
    meter = models.CharField(max_length=64)
    quantity = models.PositiveBigIntegerField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-hour", "meter")
        indexes = [models.Index(fields=["workspace", "hour"]),
                   models.Index(fields=["project"], name="usage_record_project"),  # a project's deletion
                   # metering (services/billing/metering.py): where an hour's storage batches got to, and the
                   # records a run may raise, without reading the hour's other records
                   models.Index(fields=["hour", "meter", "project_ref"], name="usage_record_hour_meter")]
        constraints = [models.UniqueConstraint(fields=["workspace", "project_ref", "hour", "meter"],
                                               name="usage_record_unique_hour_meter")]

    def __str__(self):
        return f"{self.project_ref} {self.hour:%Y-%m-%d %H}h {self.meter}={self.quantity}"


class BillingAccount(models.Model):
    """A workspace's side of billing: its customer at the payments provider, subscription, contact details, the
    monthly usage cap and which cap notices went out this period."""

    workspace = models.OneToOneField("platform_app.Workspace", on_delete=models.CASCADE, primary_key=True,
                                     related_name="billing_account")
    customer_id = models.CharField(max_length=100, blank=True, help_text="the provider's customer (cus_...)")
    subscription_id = models.CharField(max_length=100, blank=True)
    subscription_item_id = models.CharField(max_length=100, blank=True)
    subscription_status = models.CharField(max_length=32, blank=True, help_text="as the provider says (active, ...)")
    subscription_plan = models.CharField(max_length=32, blank=True)
    cancel_at_period_end = models.BooleanField(default=False)
    subscription_period_end = models.DateTimeField(null=True, blank=True)
    subscription_event_at = models.DateTimeField(
        null=True, blank=True, help_text="when the subscription state applied last was true at the provider (an "
                                         "event's `created`, or the time of an API answer): older events are ignored")
    default_payment_method_id = models.CharField(max_length=100, blank=True)
    email = models.EmailField(blank=True, help_text="where invoices go; the owners' address when empty")
    address = models.JSONField(default=dict, blank=True, help_text="line1, line2, city, postalCode, state, country")
    usage_cap = models.PositiveBigIntegerField(null=True, blank=True,
                                               help_text="monthly spend cap in minor units; empty: none")
    cap_notice_80_period = models.DateTimeField(null=True, blank=True, help_text="period whose 80 % notice was sent")
    cap_notice_100_period = models.DateTimeField(null=True, blank=True,
                                                 help_text="period whose 100 % notice was sent")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["customer_id"], condition=~Q(customer_id=""),
                                               name="billing_account_unique_customer")]

    def __str__(self):
        return f"billing of {self.workspace_id}"


class Invoice(models.Model):
    """An invoice of the workspace at the provider: the monthly usage invoice this platform builds from its usage
    records (`usage`, one per period), or one the provider made for the subscription, mirrored from its webhook
    events. `lines` are `{"category","description","quantity","unit","amount","providerItemId"}`."""

    class Kind(models.TextChoices):
        USAGE = "usage"
        SUBSCRIPTION = "subscription"

    id = PrefixedIdField(prefix="inv")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="invoices")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.USAGE)
    provider_id = models.CharField(max_length=100, null=True, blank=True, unique=True)
    number = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=24, default="draft", help_text="draft, open, paid, uncollectible, void")
    total = models.BigIntegerField(default=0, help_text="minor units")
    currency = models.CharField(max_length=3)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    lines = models.JSONField(default=list, blank=True)
    pdf_url = models.URLField(max_length=1000, blank=True)
    hosted_url = models.URLField(max_length=1000, blank=True)
    payment_failed_at = models.DateTimeField(null=True, blank=True, help_text="first failed payment (dunning)")
    paid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at",)
        constraints = [models.UniqueConstraint(fields=["workspace", "period_start"], condition=Q(kind="usage"),
                                               name="invoice_one_usage_invoice_per_period")]

    def __str__(self):
        return self.number or self.id


class TaxId(models.Model):
    """A tax id of the workspace's customer at the provider, checked by format for its country before it is sent."""

    id = PrefixedIdField(prefix="tax")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="tax_ids")
    provider_id = models.CharField(max_length=100, unique=True)
    type = models.CharField(max_length=16, help_text="the provider's type: eu_vat, gb_vat, us_ein, ...")
    value = models.CharField(max_length=64)
    country = models.CharField(max_length=2)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)
        verbose_name = "tax id"

    def __str__(self):
        return f"{self.type} {self.value}"


class PaymentEvent(models.Model):
    """An event the payments provider delivered to `POST /v1/webhooks/payments`, stored once: a replay is
    acknowledged and not applied twice."""

    event_id = models.CharField(max_length=100, unique=True)
    type = models.CharField(max_length=64)
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    result = models.CharField(max_length=200, blank=True, help_text="what applying it did")
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-received_at",)

    def __str__(self):
        return f"{self.type} {self.event_id}"


class DeploymentVisit(models.Model):
    """The first hour the edge served a preview (non-production) deployment, from the edge's per-deployment
    counters rolled up by the metering task: a preview without one was never visited."""

    deployment = models.OneToOneField("platform_app.Deployment", on_delete=models.CASCADE, primary_key=True,
                                      related_name="visit")
    first_at = models.DateTimeField(help_text="start of the first hour it was served")

    def __str__(self):
        return f"{self.deployment_id} first visited {self.first_at:%Y-%m-%d %H}h"
