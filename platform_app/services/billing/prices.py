"""The price book: `Price` rows with validity dates (edited in the admin), seeded from BILLING_PRICES. An hour of
usage is priced by the row of its meter valid at the hour's start; without one, by BILLING_PRICES."""
from datetime import UTC, datetime
from fractions import Fraction

from django.conf import settings
from django.db.models import Q

from platform_app.models import Price

SEED_FROM = datetime(2000, 1, 1, tzinfo=UTC)


def price_default(meter: str) -> Price:
    """The settings' price of a meter (unsaved); a meter settings do not know (a size since removed) is free."""
    spec = settings.BILLING_PRICES.get(meter) or {"amount": 0, "unit_size": 1, "unit": meter}
    return Price(meter=meter, unit_amount=spec["amount"], unit_size=spec["unit_size"], unit_label=spec["unit"],
                 currency=settings.BILLING_CURRENCY, valid_from=SEED_FROM)


def prices_seed() -> int:
    """A row valid from 2000 for every meter of BILLING_PRICES the price book has no row for (new instance sizes
    included); the number made. Existing rows are never changed: a new price is a new row in the admin."""
    known = set(Price.objects.values_list("meter", flat=True).distinct())
    made = [price_default(meter) for meter in settings.BILLING_PRICES if meter not in known]
    Price.objects.bulk_create(made, ignore_conflicts=True)
    return len(made)


def prices_overlapping(start: datetime, end: datetime) -> list[Price]:
    return list(Price.objects.filter(valid_from__lt=end).filter(Q(valid_until__isnull=True) | Q(valid_until__gt=start))
                .order_by("meter", "valid_from"))


def boundaries(rows: list[Price], start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """[start, end) cut where any price starts or ends: inside each piece every meter has one price."""
    cuts = {start, end}
    for row in rows:
        cuts.update(t for t in (row.valid_from, row.valid_until) if t is not None and start < t < end)
    ordered = sorted(cuts)
    return list(zip(ordered, ordered[1:]))


def price_at(rows: list[Price], meter: str, moment: datetime) -> Price:
    for row in rows:
        if row.meter == meter and row.valid_from <= moment and (row.valid_until is None or moment < row.valid_until):
            return row
    return price_default(meter)


def amount_exact(price: Price, quantity: int) -> Fraction:
    """Minor units (exact) of `quantity` base units at `price`; rounded only where totals are shown."""
    return Fraction(quantity * price.unit_amount, price.unit_size)


def price_current(meter: str, *, now: datetime) -> Price:
    rows = list(Price.objects.filter(meter=meter, valid_from__lte=now)
                .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=now)))
    return price_at(rows, meter, now)


def monthly_amount(meter: str, base_units_per_hour: float, *, now: datetime) -> int:
    """What `base_units_per_hour` of a meter costs over a month (730 hours) at today's price, in minor units."""
    price = price_current(meter, now=now)
    return round(Fraction(price.unit_amount) * Fraction(base_units_per_hour) * settings.HOURS_PER_MONTH
                 / price.unit_size)


def price_overlap(*, meter: str, valid_from: datetime, valid_until: datetime | None, exclude_pk=None) -> Price | None:
    """Another row of the meter valid at some moment of [valid_from, valid_until): one price per meter at a time."""
    rows = Price.objects.filter(meter=meter).exclude(pk=exclude_pk).filter(
        Q(valid_until__isnull=True) | Q(valid_until__gt=valid_from))
    if valid_until is not None:
        rows = rows.filter(valid_from__lt=valid_until)
    return rows.first()
