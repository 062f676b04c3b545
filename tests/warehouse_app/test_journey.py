"""The customer journey and the rules along it, through the HTTP API with cookies."""
from datetime import date, timedelta

import pytest
from django.core.management import call_command

from tests.factories import UserFactory
from tests.warehouse_app.conftest import START, VALID, logged_in, rfq
from tests.warehouse_app.factories import FacilityFactory
from warehouse_app.models import Booking, Movement, Quote

pytestmark = pytest.mark.django_db


def test_whole_customer_journey(api, facility, operator):
    resp = api.post("/api/auth/signup", {"email": "dana@example.com", "password": "Pallets-and-more-42",
                                         "name": "Dana"}, format="json")
    assert resp.status_code == 201 and resp.json()["role"] == "customer"
    customer = api.post("/api/auth/login", {"email": "dana@example.com", "password": "Pallets-and-more-42"},
                        format="json")
    assert customer.status_code == 200
    assert {"ws-access-token", "ws-refresh-token"} <= set(customer.cookies)
    assert customer.cookies["ws-access-token"]["httponly"] and customer.cookies["ws-access-token"]["samesite"] == "Lax"
    dana = api
    dana.credentials(HTTP_X_CSRF_TOKEN=dana.cookies["ws-csrf-token"].value)
    assert dana.get("/api/auth/me").json()["email"] == "dana@example.com"
    assert dana.get("/api/warehouses/search?city=Vaduz").json()["count"] == 1

    quote = rfq(dana, facility)
    assert quote.status_code == 201
    ref = quote.json()["reference"]
    assert quote.json()["status"] == "pending" and quote.json()["answer"] is None

    olga = logged_in(operator)
    assert [q["reference"] for q in olga.get("/api/quotes").json()["results"]] == [ref]
    answer = olga.post(f"/api/quotes/{ref}/answer", {"price": 1250, "currency": "chf", "unit": "pallet",
                                                     "valid_until": VALID}, format="json")
    assert answer.status_code == 200
    assert answer.json()["answer"] == {"price": 1250, "currency": "CHF", "unit": "pallet", "valid_until": VALID}
    assert dana.get("/api/rates").json()["results"][0]["median"] == 1250

    assert dana.post("/api/bookings/create", {"quote": ref, "price": 1}, format="json").status_code == 400
    booking = dana.post("/api/bookings/create", {"quote": ref}, format="json")
    assert booking.status_code == 201
    b = booking.json()
    assert b["price"] == 1250 and b["currency"] == "CHF" and b["status"] == "confirmed" and b["quantity"] == 40
    assert dana.post("/api/bookings/create", {"quote": ref}, format="json").status_code == 409  # one quote books once

    assert dana.post("/api/movements", {"booking": b["reference"], "kind": "receipt", "quantity": 30},
                     format="json").status_code == 201
    assert dana.post("/api/movements", {"booking": b["reference"], "kind": "despatch", "quantity": 10},
                     format="json").status_code == 201
    refused = dana.post("/api/movements", {"booking": b["reference"], "kind": "despatch", "quantity": 25},
                        format="json")
    assert refused.status_code == 409 and refused.json()["on_hand"] == 20
    assert Movement.objects.count() == 2

    inventory = dana.get("/api/inventory").json()["results"]
    assert inventory == [{"booking": b["reference"], "facility": "vaduz-depot", "unit": "pallet", "on_hand": 20,
                          "booked": 40, "status": "active"}]
    capacity = dana.get("/api/capacity").json()["results"]
    assert len(capacity) == 3 and {c["committed"] for c in capacity} == {40}

    assert dana.post(f"/api/bookings/{b['reference']}/update", {"quantity": 50}, format="json").status_code == 400
    assert dana.post(f"/api/bookings/{b['reference']}/update", {"term_months": 2},
                     format="json").json()["term_months"] == 2
    cancelled = dana.post(f"/api/bookings/{b['reference']}/cancel", {"reason": "moved"}, format="json")
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["cancel_reason"] == "moved"
    assert [x["status"] for x in dana.get("/api/bookings").json()["results"]] == ["cancelled"]
    assert dana.get("/api/capacity").json()["results"] == []


def test_operator_of_another_facility_gets_404(facility, operator, customer_client):
    other = FacilityFactory(slug="elsewhere")
    ref = rfq(customer_client, other).json()["reference"]
    resp = logged_in(operator).post(f"/api/quotes/{ref}/answer", {"price": 1, "currency": "EUR", "unit": "pallet",
                                                                   "valid_until": VALID}, format="json")
    assert resp.status_code == 404
    assert Quote.objects.get().status == "pending"


def test_customer_cannot_answer(facility, customer_client):
    ref = rfq(customer_client, facility).json()["reference"]
    resp = customer_client.post(f"/api/quotes/{ref}/decline", {"reason": "no"}, format="json")
    assert resp.status_code == 403


def test_declined_and_expired_quotes_cannot_be_answered_or_booked(facility, operator, customer_client, travel):
    olga = logged_in(operator)
    ref = rfq(customer_client, facility).json()["reference"]
    assert olga.post(f"/api/quotes/{ref}/decline", {"reason": "full"}, format="json").json()["decline_reason"] == "full"
    again = olga.post(f"/api/quotes/{ref}/answer", {"price": 1, "currency": "EUR", "unit": "pallet",
                                                    "valid_until": VALID}, format="json")
    assert again.status_code == 409
    assert customer_client.post("/api/bookings/create", {"quote": ref}, format="json").status_code == 409
    ref2 = rfq(customer_client, facility).json()["reference"]
    olga.post(f"/api/quotes/{ref2}/answer", {"price": 900, "currency": "EUR", "unit": "pallet",
                                             "valid_until": (date.today() + timedelta(days=1)).isoformat()},
              format="json")
    travel(3 * 86400)  # the access cookie expires too: the refresh cookie renews it transparently
    resp = customer_client.post("/api/bookings/create", {"quote": ref2}, format="json")
    assert resp.status_code == 409 and "expired" in resp.json()["error"]
    assert resp.cookies["ws-access-token"].value  # renewed even on an error answer
    assert customer_client.get(f"/api/quotes/{ref2}").json()["status"] == "expired"
    assert Quote.objects.get(reference=ref2).status == "expired"
    assert Booking.objects.count() == 0


def test_someone_elses_quote_cannot_be_booked(facility, operator, customer_client):
    ref = rfq(customer_client, facility).json()["reference"]
    logged_in(operator).post(f"/api/quotes/{ref}/answer", {"price": 5, "currency": "EUR", "unit": "pallet",
                                                           "valid_until": VALID}, format="json")
    resp = logged_in(UserFactory()).post("/api/bookings/create", {"quote": ref}, format="json")
    assert resp.status_code == 404 and Booking.objects.count() == 0


@pytest.mark.parametrize("requirement", [{"quantity": 0}, {"quantity": -3}, {"unit": "barrel"},
                                         {"start_date": "2001-01-01"}, {"term_months": 0}])
def test_bad_requirements_are_400(facility, customer_client, requirement):
    body = {"quantity": 5, "unit": "pallet", "start_date": START, "term_months": 2, **requirement}
    resp = customer_client.post("/api/quotes/rfq", {"facility": facility.slug, "requirement": body}, format="json")
    assert resp.status_code == 400 and "error" in resp.json()
    assert Quote.objects.count() == 0


def test_unknown_facility_is_404(customer_client):
    resp = customer_client.post("/api/quotes/rfq", {"facility": "nowhere", "requirement": {
        "quantity": 1, "unit": "pallet", "start_date": START, "term_months": 1}}, format="json")
    assert resp.status_code == 404


def test_shortlist_is_an_upsert_and_delete_404s_when_never_saved(facility, customer_client):
    first = customer_client.post("/api/shortlist", {"facility": facility.slug, "note": "close to the motorway"},
                                 format="json")
    again = customer_client.post("/api/shortlist", {"facility": facility.slug, "note": "call them"}, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    listed = customer_client.get("/api/shortlist").json()
    assert listed["count"] == 1 and listed["results"][0]["note"] == "call them"
    assert listed["results"][0]["facility"]["slug"] == facility.slug
    assert customer_client.delete(f"/api/shortlist?facility={facility.slug}").status_code == 204
    assert customer_client.delete(f"/api/shortlist?facility={facility.slug}").status_code == 404


def test_support_ticket_open_and_reply(customer_client):
    opened = customer_client.post("/api/support", {"subject": "Invoice", "body": "Where is it?"}, format="json")
    ref = opened.json()["reference"]
    customer_client.post("/api/support", {"reference": ref, "body": "Any news?"}, format="json")
    tickets = customer_client.get("/api/support").json()["results"]
    assert [r["body"] for r in tickets[0]["replies"]] == ["Where is it?", "Any news?"]
    assert customer_client.post("/api/support", {"reference": "T-NOPE", "body": "x"}, format="json").status_code == 404


def test_allowance_recorded_but_not_enforced_without_payments(facility, customer_client, settings):
    settings.WAREHOUSE_PLANS = {"free": {"search": 1, "rfq": 1}}
    assert rfq(customer_client, facility).status_code == 201
    assert rfq(customer_client, facility).status_code == 201
    usage = customer_client.get("/api/billing/usage").json()
    assert usage["enforced"] is False and usage["counters"]["rfq"] == {"used": 2, "allowance": 1}


def test_allowance_enforced_with_payments_configured(facility, customer_client, settings):
    settings.WAREHOUSE_PLANS = {"free": {"search": 1, "rfq": 1}}
    settings.PAYMENTS_API_KEY = "pk_test"
    assert rfq(customer_client, facility).status_code == 201
    resp = rfq(customer_client, facility)
    assert resp.status_code == 429
    counter = resp.json()["counter"]
    assert counter["used"] == 1 and counter["allowance"] == 1 and counter["period"] == date.today().strftime("%Y-%m")
    assert Quote.objects.count() == 1
