from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.factories import PASSWORD, UserFactory

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
