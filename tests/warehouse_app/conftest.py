from datetime import date, timedelta
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from django.core.management import call_command

from tests.factories import PASSWORD, UserFactory
from tests.warehouse_app.factories import FacilityFactory

SMALL = Path(__file__).resolve().parents[2] / "warehouse_app" / "data" / "osm" / "baltimore-small.osm.pbf"


@pytest.fixture
def imported(db):
    from warehouse_app.services.osm_import import osm_import

    return osm_import(path=SMALL, region="Maryland", country="United States", progress=lambda *_: None)


def logged_in(user=None, password=PASSWORD) -> APIClient:
    """A client holding the session cookies, echoing the CSRF cookie like a browser script would."""
    user = user or UserFactory()
    client = APIClient()
    resp = client.post("/api/auth/login", {"email": user.email, "password": password}, format="json")
    assert resp.status_code == 200, resp.content
    client.credentials(HTTP_X_CSRF_TOKEN=client.cookies["ws-csrf-token"].value)
    return client


@pytest.fixture
def customer(db):
    return UserFactory(email="carla@example.com", name="Carla")


@pytest.fixture
def customer_client(customer):
    return logged_in(customer)


START = (date.today() + timedelta(days=10)).isoformat()
VALID = (date.today() + timedelta(days=30)).isoformat()


def rfq(client, facility, quantity=40, term=3, unit="pallet", start=START):
    return client.post("/api/quotes/rfq", {"facility": facility.slug, "requirement": {
        "quantity": quantity, "unit": unit, "start_date": start, "term_months": term, "notes": "dry goods"}},
        format="json")


@pytest.fixture
def facility(db):
    return FacilityFactory(slug="vaduz-depot")


@pytest.fixture
def operator(facility):
    user = UserFactory(email="olga@example.com", name="Olga Logistics")
    call_command("warehouse_role", user.email, "operator", "--facility", facility.slug)
    return user
