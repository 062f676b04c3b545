"""Two concurrent despatches that together exceed the stock: exactly one succeeds (PostgreSQL)."""
import functools
from datetime import date, timedelta

import pytest
from django.db import connection

from tests.conftest import all_at_once
from tests.factories import UserFactory
from tests.warehouse_app.conftest import logged_in
from tests.warehouse_app.factories import BookingFactory, FacilityFactory, MovementFactory, QuoteFactory
from warehouse_app.models import Movement


@pytest.mark.postgres
def test_concurrent_despatches_cannot_exceed_on_hand(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    customer = UserFactory()
    facility = FacilityFactory()
    quote = QuoteFactory(customer=customer, facility=facility, quantity=100, unit="pallet",
                         start_date=date.today() + timedelta(days=1), term_months=1, status="booked",
                         price=100, currency="EUR")
    booking = BookingFactory(quote=quote, customer=customer, facility=facility, quantity=100, unit="pallet",
                             start_date=quote.start_date, term_months=1, price=100, currency="EUR",
                             status="active")
    MovementFactory(booking=booking, kind="receipt", quantity=10)
    clients = [logged_in(customer), logged_in(customer)]

    def despatch(client):
        return client.post("/api/movements", {"booking": booking.reference, "kind": "despatch", "quantity": 7},
                           format="json").status_code

    statuses = all_at_once([functools.partial(despatch, c) for c in clients])
    assert sorted(statuses) == [201, 409]
    assert Movement.objects.filter(kind="despatch").count() == 1
