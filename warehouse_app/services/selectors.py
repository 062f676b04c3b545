"""Reads of the warehouse API and pages: one function per thing they show, so views hold no query."""
from config.errors import NotFound
from warehouse_app.models import Booking, Facility, ImportRun, Movement, Quote, ShortlistEntry, SupportTicket
from warehouse_app.services.accounts import operated_facilities, role_of
from warehouse_app.services.directory import active
from warehouse_app.services.quotes import quotes_expire_due

REGION_MAP_LIMIT = 2000  # outlines drawn on a region page (the largest first)


def facility_by_slug(*, slug: str) -> Facility:
    facility = Facility.objects.filter(slug=slug).first()
    if facility is None:
        raise NotFound("No such facility.")
    return facility


def region_outlines(*, region: str, limit: int = REGION_MAP_LIMIT) -> list:
    """The region's active facilities with their outlines, largest first."""
    return list(active().filter(region__iexact=region).only(
        "slug", "name", "type_code", "floor_area_m2", "city", "region", "country", "outline")
        .order_by("-floor_area_m2", "slug")[:limit])


def is_operator(user) -> bool:
    return role_of(user) in ("operator", "owner")


def customer_quotes(*, user) -> list:
    """The caller's own rate requests, newest first (an answered quote past its validity is shown expired)."""
    quotes = Quote.objects.filter(customer=user)
    quotes_expire_due(quotes)
    return list(quotes.select_related("facility"))


def customer_bookings(*, user):
    return Booking.objects.filter(customer=user).select_related("facility")


def booking_movements(*, booking, limit: int = 100):
    return Movement.objects.filter(booking=booking)[:limit]


def customer_movements(*, user, limit: int | None = 50):
    qs = Movement.objects.filter(booking__customer=user).select_related("booking")
    return qs[:limit] if limit else qs


def shortlist_of(*, user):
    return ShortlistEntry.objects.filter(user=user).select_related("facility")


def is_shortlisted(*, user, facility) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and ShortlistEntry.objects.filter(
        user=user, facility=facility).exists()


def operator_inbox(*, user, answered_limit: int = 50) -> dict:
    """Pending requests to the facilities the caller answers for (oldest first), and the latest answered ones."""
    qs = Quote.objects.filter(facility__in=operated_facilities(user)).select_related("facility", "customer")
    return {"pending": list(qs.filter(status=Quote.Status.PENDING).order_by("created_at")),
            "done": list(qs.exclude(status=Quote.Status.PENDING).order_by("-answered_at", "-created_at")
                         [:answered_limit])}


def tickets_of(*, user):
    return SupportTicket.objects.filter(user=user).prefetch_related("replies")


def last_import():
    """The newest finished import run, or None."""
    return ImportRun.objects.filter(finished_at__isnull=False).first()


def withdrawn_count() -> int:
    return Facility.objects.filter(status=Facility.Status.WITHDRAWN).count()
