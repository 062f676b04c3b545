"""A quote may be priced in another unit than the request asked for: the answer says so, and a booking takes its
unit and price together from the quote, converting nothing."""
import pytest

from tests.warehouse_app.conftest import VALID, logged_in, rfq
from warehouse_app.models import Booking

pytestmark = pytest.mark.django_db


def answer(operator, ref, *, price=7, unit="m2"):
    resp = logged_in(operator).post(f"/api/quotes/{ref}/answer", {"price": price, "currency": "EUR", "unit": unit,
                                                                  "valid_until": VALID}, format="json")
    assert resp.status_code == 200, resp.content
    return resp


def test_an_answer_in_another_unit_says_so(facility, operator, customer_client):
    ref = rfq(customer_client, facility, quantity=10, unit="pallet").json()["reference"]
    answered = answer(operator, ref).json()
    assert answered["answer"]["unit"] == "m2" and answered["requirement"]["unit"] == "pallet"
    mismatch = answered["unit_mismatch"]
    assert mismatch["requested"] == "pallet" and mismatch["quoted"] == "m2"
    assert "m2" in mismatch["note"] and "pallet" in mismatch["note"]
    assert customer_client.get(f"/api/quotes/{ref}").json()["unit_mismatch"] == mismatch


def test_an_answer_in_the_requested_unit_has_no_mismatch(facility, operator, customer_client):
    ref = rfq(customer_client, facility, quantity=10, unit="pallet").json()["reference"]
    assert answer(operator, ref, unit="pallet").json()["unit_mismatch"] is None
    booking = customer_client.post("/api/bookings/create", {"quote": ref}, format="json")
    assert booking.status_code == 201
    assert {k: booking.json()[k] for k in ("quantity", "unit", "price")} == {"quantity": 10, "unit": "pallet",
                                                                           "price": 7}


def test_a_booking_takes_the_quoted_unit_with_the_quoted_price(facility, operator, customer_client):
    ref = rfq(customer_client, facility, quantity=10, unit="pallet").json()["reference"]
    answer(operator, ref)
    refused = customer_client.post("/api/bookings/create", {"quote": ref}, format="json")
    assert refused.status_code == 400 and "m2" in refused.json()["error"]
    assert Booking.objects.count() == 0
    booked = customer_client.post("/api/bookings/create", {"quote": ref, "quantity": 120}, format="json")
    assert booked.status_code == 201, booked.content
    assert {k: booked.json()[k] for k in ("quantity", "unit", "price")} == {"quantity": 120, "unit": "m2", "price": 7}
    row = Booking.objects.get()
    assert (row.quantity, row.unit, row.price) == (120, "m2", 7)


def test_the_customer_page_shows_the_mismatch_and_books_in_the_quoted_unit(facility, operator, customer, client):
    client.force_login(customer)
    ref = rfq(logged_in(customer), facility, quantity=10, unit="pallet").json()["reference"]
    answer(operator, ref)
    page = client.get("/warehouses/my/").content.decode()
    assert "Priced per m2" in page and 'name="quantity"' in page
    refused = client.post(f"/warehouses/my/quotes/{ref}/book", {})
    assert refused.status_code == 400 and Booking.objects.count() == 0
    booked = client.post(f"/warehouses/my/quotes/{ref}/book", {"quantity": "120"})
    assert booked.status_code == 302
    assert (Booking.objects.get().quantity, Booking.objects.get().unit) == (120, "m2")
