"""Directory pages render from the imported data, without JavaScript, with the attribution."""
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_home_search_and_facility_pages(imported):
    client = Client()
    home = client.get("/warehouses/").content.decode()
    assert "Maryland" in home and "OpenStreetMap contributors" in home
    search = client.get("/warehouses/search/?type=warehouse&colour=red").content.decode()
    assert "BWI2 Amazon Fulfillment Center" in search and "colour" in search and "unknown filter" in search
    assert "1 facilities" in search
    city = client.get("/warehouses/city/Baltimore/")
    assert city.status_code == 200 and "7 facilities" in city.content.decode()
    from warehouse_app.models import Facility

    bwi2 = Facility.objects.get(type_code="warehouse")
    page = client.get(f"/warehouses/{bwi2.slug}/").content.decode()
    assert "<svg" in page and 'd="M' in page
    assert f"https://www.openstreetmap.org/way/{bwi2.osm_id}" in page
    assert "ODbL" in page
    assert client.get("/warehouses/nothing-here/").status_code == 404
