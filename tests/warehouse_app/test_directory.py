"""Public directory routes on the imported small extract."""
import pytest

from tests.warehouse_app.conftest import logged_in

pytestmark = pytest.mark.django_db


def test_paged_list_and_bounds(api, imported):
    body = api.get("/api/warehouses?page=2&page_size=50").json()
    assert body["count"] == 78 and body["page"] == 2 and body["page_size"] == 50 and len(body["results"]) == 28
    assert body["attribution"]["text"] == "© OpenStreetMap contributors"
    assert api.get("/api/warehouses?page_size=1000").json()["page_size"] == 100
    resp = api.get("/api/warehouses?page=9")
    assert resp.status_code == 404 and "past the end" in resp.json()["error"]
    assert api.get("/api/warehouses?page=abc").status_code == 400


def test_search_filters_and_names_what_it_could_not_apply(api, imported):
    body = api.get("/api/warehouses/search?type=warehouse&min_area=50000&colour=red&max_area=big&operator=x").json()
    assert [f["name"] for f in body["results"]] == ["BWI2 Amazon Fulfillment Center"]
    assert {u["name"] for u in body["unapplied_filters"]} == {"colour", "max_area", "operator"}
    assert body["count"] == 1
    body = api.get("/api/warehouses/search?city=baltimore").json()
    assert body["count"] == 7 and body["unapplied_filters"] == []


def test_a_search_answers_the_same_json_whether_its_page_is_new_or_kept(api, imported):
    from warehouse_app.models import Facility

    first = api.get("/api/warehouses/search?type=warehouse&colour=red")
    again = api.get("/api/warehouses/search?type=warehouse&colour=red")
    assert first.status_code == again.status_code == 200 and first["Content-Type"] == "application/json"
    assert first.content == again.content  # the kept page's rows, written the same way
    body = first.json()
    assert list(body) == ["results", "count", "count_is_estimate", "page", "page_size", "unapplied_filters",
                          "attribution"]
    top = Facility.objects.filter(type_code="warehouse").order_by("-floor_area_m2", "slug").first()
    assert body["results"][0] == {
        "slug": top.slug, "name": top.name, "display_name": top.name or body["results"][0]["display_name"],
        "osm_way_id": top.osm_id if top.osm_type == "way" else None,
        "osm_url": f"https://www.openstreetmap.org/{top.osm_type}/{top.osm_id}", "type": "warehouse",
        "region": top.region, "country": top.country, "city": top.city, "operator": top.operator,
        "floor_area_m2": top.floor_area_m2, "lat": top.lat, "lon": top.lon, "status": "active"}
    assert body["unapplied_filters"] == [{"name": "colour", "reason": "unknown filter"}]
    assert "\\u" not in first.content.decode()  # UTF-8 as DRF writes it, not escaped


def test_detail_has_way_id_and_outline(api, imported):
    slug = api.get("/api/warehouses/search?type=warehouse").json()["results"][0]["slug"]
    body = api.get(f"/api/warehouses/{slug}").json()
    assert body["osm_way_id"] == int(slug.rsplit("-", 1)[1])
    assert body["outline"]["type"] in ("Polygon", "MultiPolygon")
    assert api.get("/api/warehouses/no-such-place").status_code == 404


def test_aggregates(api, imported):
    regions = api.get("/api/regions").json()["results"]
    assert regions == [{"country": "United States", "region": "Maryland", "facility_count": 78,
                        "floor_area_m2": pytest.approx(562878.1, abs=1)}]
    types = {t["code"]: t["facility_count"] for t in api.get("/api/facility-types").json()["results"]}
    assert types["warehouse"] == 1
    cities = api.get("/api/cities").json()["results"]
    assert sum(c["facility_count"] for c in cities) == 19 and all(c["city"] for c in cities)
    operators = api.get("/api/operators").json()
    assert operators["results"] == [] and "no commercial relationship" in operators["disclaimer"]


def test_health_reports_dataset_and_attribution(api, imported):
    body = api.get("/api/health").json()
    assert body["status"] == "ok" and body["dataset"]["facilities"] == 78
    assert body["dataset"]["source_file"] == "baltimore-small.osm.pbf" and body["dataset"]["imported_at"]
    assert body["attribution"]["license"] == "ODbL-1.0"


def test_signed_in_search_counts_against_the_allowance(imported, customer):
    client = logged_in(customer)
    client.get("/api/warehouses/search?type=industrial")
    client.get("/api/warehouses/search?q=amazon")
    assert client.get("/api/billing/usage").json()["counters"]["search"]["used"] == 2
