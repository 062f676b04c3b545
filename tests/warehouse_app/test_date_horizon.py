"""Rate requests start within a horizon (WAREHOUSE_START_HORIZON_DAYS), and committed capacity is listed in
calendar order whatever the year."""
from datetime import date, timedelta

import pytest

from tests.warehouse_app.conftest import rfq
from tests.warehouse_app.factories import BookingFactory, QuoteFactory
from warehouse_app.models import Quote

pytestmark = pytest.mark.django_db


def test_a_start_date_past_the_horizon_is_400_naming_it(facility, customer_client, settings):
    resp = rfq(customer_client, facility, start="9999-12-31", term=120)
    assert resp.status_code == 400 and "start_date" in resp.json()["error"]
    assert str(settings.WAREHOUSE_START_HORIZON_DAYS) in resp.json()["error"]
    assert Quote.objects.count() == 0
    last_day = (date.today() + timedelta(days=settings.WAREHOUSE_START_HORIZON_DAYS)).isoformat()
    assert rfq(customer_client, facility, start=last_day, term=120).status_code == 201
    past_it = (date.today() + timedelta(days=settings.WAREHOUSE_START_HORIZON_DAYS + 1)).isoformat()
    assert rfq(customer_client, facility, start=past_it).status_code == 400


def test_capacity_months_are_in_calendar_order(customer, customer_client, facility):
    """Bookings made before the horizon existed may reach past year 9999; they still sort after 2026."""
    soon = QuoteFactory(customer=customer, facility=facility, status="booked", start_date=date(2026, 12, 1))
    BookingFactory(quote=soon, customer=customer, facility=facility, quantity=5, unit="pallet",
                   start_date=date(2026, 12, 1), term_months=1, price=7, currency="EUR")
    far = QuoteFactory(customer=customer, facility=facility, status="booked", start_date=date(9999, 12, 1))
    BookingFactory(quote=far, customer=customer, facility=facility, quantity=3, unit="pallet",
                   start_date=date(9999, 12, 1), term_months=2, price=7, currency="EUR")
    months = [row["month"] for row in customer_client.get("/api/capacity").json()["results"]]
    assert months == ["2026-12", "9999-12", "10000-01"]
