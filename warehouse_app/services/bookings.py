"""Bookings from answered quotes, and the stock recorded against them."""
from collections import defaultdict
from datetime import date

from django.db import IntegrityError, transaction
from django.db.models import Case, IntegerField, Q, Sum, When
from django.utils import timezone

from config.errors import ApplicationError, Conflict, NotFound, ValidationFailed
from warehouse_app.models import Booking, Movement, Quote
from warehouse_app.services.accounts import operated_facilities
from warehouse_app.services.quotes import quote_refresh_expiry, quote_unit_mismatch

B = Booking.Status
LIVE = (B.CONFIRMED, B.ACTIVE)


class StockConflict(ApplicationError):
    status, code = 409, "insufficient_stock"


@transaction.atomic
def booking_create(*, customer, quote_reference: str, quantity: int | None = None,
                   term_months: int | None = None) -> Booking:
    quote = Quote.objects.select_for_update().filter(reference=quote_reference, customer=customer).first()
    if quote is None:
        raise NotFound("No such quote.")
    quote_refresh_expiry(quote)
    if quote.status != Quote.Status.ANSWERED:
        raise Conflict(f"Only an answered, still valid quote can be booked (this one is {quote.status}).")
    mismatch = quote_unit_mismatch(quote)
    if mismatch and quantity is None:
        raise ValidationFailed(f"{mismatch['note']} Give quantity in {mismatch['quoted']}.")
    quantity, term_months = _within_quote(quote, quantity or quote.quantity, term_months or quote.term_months)
    try:
        with transaction.atomic():
            # The unit travels with the price: a price per m2 is never stored against pallets.
            booking = Booking.objects.create(quote=quote, customer=customer, facility=quote.facility, quantity=quantity,
                                             unit=quote.price_unit or quote.unit, start_date=quote.start_date,
                                             term_months=term_months, price=quote.price, currency=quote.currency)
    except IntegrityError:
        raise Conflict("This quote is already booked.")
    quote.status = Quote.Status.BOOKED
    quote.save(update_fields=["status"])
    return booking


def _within_quote(quote: Quote, quantity: int, term_months: int, *, booked: int | None = None) -> tuple[int, int]:
    """The quote's quantity bounds a booking in the requested unit; a quote priced in another unit covered no
    quantity in that unit, so what was booked (if anything yet) is the bound."""
    limit = booked if quote_unit_mismatch(quote) else quote.quantity
    if limit is not None and quantity > limit:
        raise ValidationFailed(f"quantity exceeds what the quote covered ({limit} {quote.price_unit or quote.unit}).")
    if term_months > quote.term_months:
        raise ValidationFailed(f"term_months exceeds what the quote covered ({quote.term_months}).")
    return quantity, term_months


def bookings_visible_to(user):
    return Booking.objects.filter(Q(customer=user) | Q(facility__in=operated_facilities(user))).select_related(
        "facility", "quote")


def booking_get(*, user, reference: str, lock: bool = False, own: bool = False) -> Booking:
    qs = Booking.objects.filter(customer=user) if own else bookings_visible_to(user)
    qs = qs.filter(reference=reference)
    booking = (qs.select_for_update() if lock else qs).first()
    if booking is None:
        raise NotFound("No such booking.")
    return booking


@transaction.atomic
def booking_update(*, customer, reference: str, quantity: int | None, term_months: int | None) -> Booking:
    booking = booking_get(user=customer, reference=reference, lock=True, own=True)
    if booking.status not in LIVE:
        raise Conflict(f"A {booking.status} booking cannot be changed.")
    quantity, term_months = _within_quote(booking.quote, quantity or booking.quantity,
                                          term_months or booking.term_months, booked=booking.quantity)
    if booking.unit == "pallet" and quantity < on_hand(booking):
        raise Conflict("quantity cannot go below the stock on hand.", extra={"on_hand": on_hand(booking)})
    booking.quantity, booking.term_months = quantity, term_months
    booking.save(update_fields=["quantity", "term_months"])
    return booking


@transaction.atomic
def booking_cancel(*, customer, reference: str, reason: str) -> Booking:
    booking = booking_get(user=customer, reference=reference, lock=True, own=True)
    if booking.status not in LIVE:
        raise Conflict(f"A {booking.status} booking cannot be cancelled.")
    booking.status, booking.cancel_reason, booking.cancelled_at = B.CANCELLED, reason, timezone.now()
    booking.save(update_fields=["status", "cancel_reason", "cancelled_at"])
    return booking


SIGNED = Case(When(kind=Movement.Kind.RECEIPT, then="quantity"), default=0, output_field=IntegerField()) - Case(
    When(kind=Movement.Kind.DESPATCH, then="quantity"), default=0, output_field=IntegerField())


def on_hand(booking: Booking) -> int:
    return booking.movements.aggregate(n=Sum(SIGNED))["n"] or 0


@transaction.atomic
def movement_record(*, user, booking_reference: str, kind: str, quantity: int, sku: str = "", note: str = "") -> Movement:
    """The booking row is locked first, so two concurrent despatches see each other's stock."""
    booking = booking_get(user=user, reference=booking_reference, lock=True, own=True)
    if booking.status not in LIVE:
        raise Conflict(f"No movements on a {booking.status} booking.")
    current = on_hand(booking)
    if kind == Movement.Kind.DESPATCH and quantity > current:
        raise StockConflict(f"Cannot despatch {quantity}: only {current} on hand.", extra={"on_hand": current})
    if kind == Movement.Kind.RECEIPT and booking.unit == "pallet" and current + quantity > booking.quantity:
        raise Conflict(f"Receiving {quantity} would exceed the {booking.quantity} pallets booked.",
                       extra={"on_hand": current})
    movement = Movement.objects.create(booking=booking, kind=kind, quantity=quantity, sku=sku, note=note,
                                       created_by=user)
    if booking.status == B.CONFIRMED and kind == Movement.Kind.RECEIPT:
        booking.status = B.ACTIVE
        booking.save(update_fields=["status"])
    return movement


def inventory(*, user) -> list[dict]:
    """On-hand quantity per booking of the caller, cancelled bookings included."""
    rows = (Booking.objects.filter(customer=user).select_related("facility")
            .annotate(received=Sum("movements__quantity", filter=Q(movements__kind=Movement.Kind.RECEIPT)),
                      despatched=Sum("movements__quantity", filter=Q(movements__kind=Movement.Kind.DESPATCH))))
    return [{"booking": b.reference, "facility": b.facility.slug, "unit": b.unit,
             "on_hand": (b.received or 0) - (b.despatched or 0), "booked": b.quantity, "status": b.status}
            for b in rows]


def _months(start: date, count: int):
    """(year, month) pairs: they sort by date, where "YYYY-MM" text would put "10000-01" first."""
    year, month = start.year, start.month
    for _ in range(count):
        yield year, month
        month += 1
        if month == 13:
            year, month = year + 1, 1


def capacity(*, user) -> list[dict]:
    """Committed units by month from live bookings (the caller's, or at the facilities it operates).
    This is commitment, not free space: the directory does not know a building's capacity."""
    committed = defaultdict(int)
    for b in bookings_visible_to(user).filter(status__in=LIVE):
        for month in _months(b.start_date, b.term_months):
            committed[(month, b.unit)] += b.quantity
    return [{"month": f"{year:04d}-{month:02d}", "unit": u, "committed": n}
            for ((year, month), u), n in sorted(committed.items())]
