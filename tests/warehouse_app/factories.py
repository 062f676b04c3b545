"""Factories of the warehouse service: facilities, accounts, quotes, bookings, stock, support."""
from datetime import date, timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from tests.factories import UserFactory
from warehouse_app.models import (Booking, DirectoryFacet, Facility, ImportRun, Movement, OperatorFacility, Quote,
                                  ShortlistEntry, SupportTicket, TicketReply, UsageCounter, WarehouseProfile)


class FacilityFactory(DjangoModelFactory[Facility]):
    class Meta:
        model = Facility

    slug = factory.Sequence(lambda n: f"depot-{n}")
    osm_id = factory.Sequence(lambda n: 900000 + n)
    name = factory.Sequence(lambda n: f"Depot {n}")
    type_code = "warehouse"
    city = "Vaduz"
    region = "Oberland"
    country = "Liechtenstein"
    floor_area_m2 = 2500.0
    lat = 47.14
    lon = 9.52
    outline = factory.LazyAttribute(lambda o: {"type": "Polygon", "coordinates": [[
        [o.lon, o.lat], [o.lon + 0.001, o.lat], [o.lon + 0.001, o.lat + 0.0005], [o.lon, o.lat + 0.0005], [o.lon, o.lat]]]})


class ImportRunFactory(DjangoModelFactory[ImportRun]):
    class Meta:
        model = ImportRun

    source_file = "liechtenstein.osm.pbf"
    finished_at = factory.LazyFunction(timezone.now)


class DirectoryFacetFactory(DjangoModelFactory[DirectoryFacet]):
    class Meta:
        model = DirectoryFacet

    kind = DirectoryFacet.Kind.REGION
    country = "Liechtenstein"
    region = "Oberland"
    facility_count = 1
    floor_area_m2 = 2500.0


class WarehouseProfileFactory(DjangoModelFactory[WarehouseProfile]):
    class Meta:
        model = WarehouseProfile

    user = factory.SubFactory(UserFactory)
    role = WarehouseProfile.Role.CUSTOMER


class OperatorFacilityFactory(DjangoModelFactory[OperatorFacility]):
    class Meta:
        model = OperatorFacility

    user = factory.SubFactory(UserFactory)
    facility = factory.SubFactory(FacilityFactory)


class QuoteFactory(DjangoModelFactory[Quote]):
    """A pending rate request for 100 pallets; pass `status="answered", price=..., currency=...` for an answer."""

    class Meta:
        model = Quote

    customer = factory.SubFactory(UserFactory)
    facility = factory.SubFactory(FacilityFactory)
    quantity = 100
    unit = Quote.Unit.PALLET
    start_date = factory.LazyFunction(lambda: date.today() + timedelta(days=7))
    term_months = 6


class BookingFactory(DjangoModelFactory[Booking]):
    """A confirmed booking of an answered quote, on the quote's terms."""

    class Meta:
        model = Booking

    quote = factory.SubFactory(QuoteFactory, status=Quote.Status.BOOKED, price=500, currency="EUR",
                               price_unit="pallet")
    customer = factory.SelfAttribute("quote.customer")
    facility = factory.SelfAttribute("quote.facility")
    quantity = factory.SelfAttribute("quote.quantity")
    unit = factory.SelfAttribute("quote.unit")
    start_date = factory.SelfAttribute("quote.start_date")
    term_months = factory.SelfAttribute("quote.term_months")
    price = factory.LazyAttribute(lambda o: o.quote.price or 500)
    currency = factory.LazyAttribute(lambda o: o.quote.currency or "EUR")


class MovementFactory(DjangoModelFactory[Movement]):
    class Meta:
        model = Movement

    booking = factory.SubFactory(BookingFactory)
    kind = Movement.Kind.RECEIPT
    quantity = 10


class ShortlistEntryFactory(DjangoModelFactory[ShortlistEntry]):
    class Meta:
        model = ShortlistEntry

    user = factory.SubFactory(UserFactory)
    facility = factory.SubFactory(FacilityFactory)


class SupportTicketFactory(DjangoModelFactory[SupportTicket]):
    class Meta:
        model = SupportTicket

    user = factory.SubFactory(UserFactory)
    subject = factory.Sequence(lambda n: f"Question {n}")


class TicketReplyFactory(DjangoModelFactory[TicketReply]):
    class Meta:
        model = TicketReply

    ticket = factory.SubFactory(SupportTicketFactory)
    author = factory.SelfAttribute("ticket.user")
    body = "Where is my pallet?"


class UsageCounterFactory(DjangoModelFactory[UsageCounter]):
    class Meta:
        model = UsageCounter

    user = factory.SubFactory(UserFactory)
    period = factory.LazyFunction(lambda: timezone.now().strftime("%Y-%m"))
    kind = "search"
    used = 1
