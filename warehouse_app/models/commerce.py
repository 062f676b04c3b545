"""Accounts, quotes, bookings, stock, shortlist, support and allowances of the warehouse service."""
import secrets
import string

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ("WarehouseProfile", "OperatorFacility", "Quote", "Booking", "Movement", "ShortlistEntry",
           "SupportTicket", "TicketReply", "UsageCounter")


def new_reference(prefix: str) -> str:
    return prefix + "-" + "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(8))


def quote_reference():
    return new_reference("Q")


def booking_reference():
    return new_reference("B")


def ticket_reference():
    return new_reference("T")


class WarehouseProfile(models.Model):
    """A user's role and plan in the warehouse service."""

    class Role(models.TextChoices):
        CUSTOMER = "customer"
        OPERATOR = "operator"
        OWNER = "owner"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="warehouse_profile")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.CUSTOMER)
    plan = models.CharField(max_length=32, default="free")

    def __str__(self):
        return f"{self.user} ({self.role}, {self.plan})"


class OperatorFacility(models.Model):
    """An operator account answers for this facility."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="operated_facilities")
    facility = models.ForeignKey("warehouse_app.Facility", on_delete=models.CASCADE, related_name="operator_links")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "facility"], name="operator_facility_unique")]
        verbose_name_plural = "operator facilities"


class Quote(models.Model):
    """A rate request and its answer: pending → answered | declined; answered → booked | expired."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ANSWERED = "answered"
        DECLINED = "declined"
        EXPIRED = "expired"
        BOOKED = "booked"

    class Unit(models.TextChoices):
        PALLET = "pallet"
        M2 = "m2"

    reference = models.CharField(max_length=12, unique=True, default=quote_reference)
    customer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quotes")
    facility = models.ForeignKey("warehouse_app.Facility", on_delete=models.PROTECT, related_name="quotes")
    quantity = models.PositiveIntegerField()
    unit = models.CharField(max_length=8, choices=Unit.choices)
    start_date = models.DateField()
    term_months = models.PositiveSmallIntegerField()
    notes = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    price = models.PositiveIntegerField(null=True, blank=True, help_text="minor units per unit per month")
    currency = models.CharField(max_length=3, blank=True)
    price_unit = models.CharField(max_length=8, blank=True)
    valid_until = models.DateField(null=True, blank=True)
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    answered_at = models.DateTimeField(null=True, blank=True)
    decline_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)
        constraints = [models.CheckConstraint(condition=models.Q(quantity__gt=0), name="quote_quantity_positive")]

    def __str__(self):
        return self.reference


class Booking(models.Model):
    """Space booked from an answered quote, at the quote's price. One quote books once."""

    class Status(models.TextChoices):
        CONFIRMED = "confirmed"
        ACTIVE = "active"
        CANCELLED = "cancelled"
        COMPLETED = "completed"

    reference = models.CharField(max_length=12, unique=True, default=booking_reference)
    quote = models.OneToOneField(Quote, on_delete=models.PROTECT, related_name="booking")
    customer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="bookings")
    facility = models.ForeignKey("warehouse_app.Facility", on_delete=models.PROTECT, related_name="bookings")
    quantity = models.PositiveIntegerField()
    unit = models.CharField(max_length=8)
    start_date = models.DateField()
    term_months = models.PositiveSmallIntegerField()
    price = models.PositiveIntegerField(help_text="from the quote: minor units per unit per month")
    currency = models.CharField(max_length=3)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CONFIRMED, db_index=True)
    cancel_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)
        constraints = [models.CheckConstraint(condition=models.Q(quantity__gt=0), name="booking_quantity_positive")]

    def __str__(self):
        return self.reference


class Movement(models.Model):
    """A receipt or despatch of stock against a booking. Append-only: on-hand is their sum."""

    class Kind(models.TextChoices):
        RECEIPT = "receipt"
        DESPATCH = "despatch"

    booking = models.ForeignKey(Booking, on_delete=models.CASCADE, related_name="movements")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    quantity = models.PositiveIntegerField()
    sku = models.CharField(max_length=64, blank=True)
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at", "-pk")
        constraints = [models.CheckConstraint(condition=models.Q(quantity__gt=0), name="movement_quantity_positive")]


class ShortlistEntry(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="shortlist")
    facility = models.ForeignKey("warehouse_app.Facility", on_delete=models.CASCADE, related_name="+")
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-updated_at",)
        constraints = [models.UniqueConstraint(fields=["user", "facility"], name="shortlist_unique_facility")]
        verbose_name_plural = "shortlist entries"


class SupportTicket(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        ANSWERED = "answered"
        CLOSED = "closed"

    reference = models.CharField(max_length=12, unique=True, default=ticket_reference)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="support_tickets")
    subject = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self):
        return f"{self.reference}: {self.subject}"


class TicketReply(models.Model):
    ticket = models.ForeignKey(SupportTicket, on_delete=models.CASCADE, related_name="replies")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    from_staff = models.BooleanField(default=False)
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at", "pk")
        verbose_name_plural = "ticket replies"


class UsageCounter(models.Model):
    """Searches and rate requests per account per month."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="warehouse_usage")
    period = models.CharField(max_length=7, help_text="YYYY-MM")
    kind = models.CharField(max_length=8, help_text="search or rfq")
    used = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "period", "kind"], name="usage_counter_unique")]
