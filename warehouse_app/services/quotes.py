"""Rate requests and their answers. One place for every state change of a quote."""
import statistics
from collections import defaultdict
from datetime import date, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from warehouse_app.models import Facility, Quote
from warehouse_app.services.accounts import operated_facilities
from warehouse_app.services.allowances import allowance_consume

S = Quote.Status


def quote_refresh_expiry(quote: Quote) -> Quote:
    """An answered quote past its validity is expired (persisted when seen)."""
    if quote.status == S.ANSWERED and quote.valid_until and quote.valid_until < timezone.localdate():
        Quote.objects.filter(pk=quote.pk, status=S.ANSWERED).update(status=S.EXPIRED)
        quote.status = S.EXPIRED
    return quote


def quote_unit_mismatch(quote: Quote) -> dict | None:
    """When the answer prices another unit than the request asked for: both units and a note saying nothing
    is converted (a booking then names its quantity in the quoted unit)."""
    if not quote.price_unit or quote.price_unit == quote.unit:
        return None
    note = (f"Priced per {quote.price_unit}; the request asked for {quote.quantity} {quote.unit}. "
            f"Nothing is converted: a booking is in {quote.price_unit}.")
    return {"requested": quote.unit, "quoted": quote.price_unit, "note": note}


def quotes_expire_due(quotes) -> int:
    """Expire, in one statement, the answered quotes of `quotes` past their validity (what
    quote_refresh_expiry does for one)."""
    return quotes.filter(status=S.ANSWERED, valid_until__lt=timezone.localdate()).update(status=S.EXPIRED)


def quotes_visible_to(user):
    """The caller's own requests, plus requests to the facilities it operates."""
    return Quote.objects.filter(Q(customer=user) | Q(facility__in=operated_facilities(user))).select_related("facility")


def quote_get(*, user, reference: str) -> Quote:
    quote = quotes_visible_to(user).filter(reference=reference).first()
    if quote is None:
        raise NotFound("No such quote.")
    return quote_refresh_expiry(quote)


@transaction.atomic
def quote_request(*, customer, facility_slug: str, quantity: int, unit: str, start_date: date, term_months: int,
                  notes: str = "") -> Quote:
    facility = Facility.objects.filter(slug=facility_slug).first()
    if facility is None:
        raise NotFound("No such facility.")
    if facility.status != Facility.Status.ACTIVE:
        raise Conflict("This facility is no longer listed.")
    if start_date < timezone.localdate():
        raise ValidationFailed("start_date must not be in the past.")
    horizon = settings.WAREHOUSE_START_HORIZON_DAYS
    if start_date > timezone.localdate() + timedelta(days=horizon):
        raise ValidationFailed(f"start_date must be within {horizon} days from today.")
    allowance_consume(user=customer, kind="rfq")
    return Quote.objects.create(customer=customer, facility=facility, quantity=quantity, unit=unit,
                                start_date=start_date, term_months=term_months, notes=notes)


def _quote_for_operator(*, user, reference: str) -> Quote:
    """404 (not 403) when the quote's facility is not the caller's: nothing leaks."""
    quote = (Quote.objects.select_for_update().filter(reference=reference, facility__in=operated_facilities(user))
             .select_related("facility").first())
    if quote is None:
        raise NotFound("No such quote.")
    return quote_refresh_expiry(quote)


@transaction.atomic
def quote_answer(*, user, reference: str, price: int, currency: str, unit: str, valid_until: date) -> Quote:
    quote = _quote_for_operator(user=user, reference=reference)
    if quote.status != S.PENDING:
        raise Conflict(f"A {quote.status} quote cannot be answered.")
    if valid_until < timezone.localdate():
        raise ValidationFailed("valid_until must not be in the past.")
    quote.status, quote.price, quote.currency, quote.price_unit = S.ANSWERED, price, currency.upper(), unit
    quote.valid_until, quote.answered_by, quote.answered_at = valid_until, user, timezone.now()
    quote.save()
    return quote


@transaction.atomic
def quote_decline(*, user, reference: str, reason: str) -> Quote:
    quote = _quote_for_operator(user=user, reference=reference)
    if quote.status != S.PENDING:
        raise Conflict(f"A {quote.status} quote cannot be declined.")
    quote.status, quote.decline_reason = S.DECLINED, reason
    quote.answered_by, quote.answered_at = user, timezone.now()
    quote.save()
    return quote


def rates_current() -> list[dict]:
    """Answered quotes inside their validity, per facility type, region, unit and currency."""
    groups = defaultdict(list)
    rows = (Quote.objects.filter(status=S.ANSWERED, valid_until__gte=timezone.localdate())
            .values_list("facility__type_code", "facility__region", "price_unit", "currency", "price"))
    for type_code, region, unit, currency, price in rows:
        groups[(type_code, region, unit, currency)].append(price)
    return [{"type": t, "region": r, "unit": u, "currency": c, "count": len(p), "min": min(p),
             "median": statistics.median(p), "max": max(p)} for (t, r, u, c), p in sorted(groups.items())]
