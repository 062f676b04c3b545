"""The OSM import on the small real extract: counts, areas, places, idempotency, withdrawal."""
import pytest
from django.db.models import Count
from pyproj import Geod
from shapely.geometry import shape

from warehouse_app.models import Facility, ImportRun
from tests.warehouse_app.conftest import SMALL

pytestmark = pytest.mark.django_db


def test_import_keeps_warehouse_like_buildings_above_the_minimum_area(imported):
    assert imported.kept == 78 and imported.created == 78
    assert imported.skipped["below_min_area"] == 9  # 87 warehouse-like ways in the extract
    counts = dict(Facility.objects.values_list("type_code").annotate(n=Count("id")))
    assert counts["warehouse"] == 1
    assert counts["industrial"] + counts["commercial"] == 77
    assert ImportRun.objects.get().kept == 78


def test_areas_match_an_independent_geodesic_computation(imported):
    geod = Geod(ellps="WGS84")
    for facility in Facility.objects.order_by("-floor_area_m2")[:5]:
        geodesic = abs(geod.geometry_area_perimeter(shape(facility.outline))[0])
        assert facility.floor_area_m2 == pytest.approx(geodesic, rel=0.002)
    bwi2 = Facility.objects.get(type_code="warehouse")
    assert bwi2.name == "BWI2 Amazon Fulfillment Center"
    assert bwi2.floor_area_m2 == pytest.approx(95013, rel=0.001)


def test_cities_regions_and_countries(imported):
    assert Facility.objects.get(type_code="warehouse").city == "Baltimore"
    assert Facility.objects.exclude(city="").count() == 19  # 23 ways carry addr:city; 4 are below the minimum area
    assert set(Facility.objects.values_list("region", "country").distinct()) == {("Maryland", "United States")}


def test_reimport_updates_by_osm_id_and_withdraws_what_left(imported):
    slugs = set(Facility.objects.values_list("slug", flat=True))
    gone = Facility.objects.create(slug="demolished-1", osm_type="way", osm_id=1, type_code="warehouse",
                                   floor_area_m2=500, lat=39.3, lon=-76.6, outline={}, source_file=SMALL.name)
    from warehouse_app.services.osm_import import osm_import

    again = osm_import(path=SMALL, region="Maryland", country="United States", progress=lambda *_: None)
    assert again.created == 0 and again.updated == 78 and again.withdrawn == 1
    assert set(Facility.objects.filter(status="active").values_list("slug", flat=True)) == slugs
    gone.refresh_from_db()
    assert gone.status == "withdrawn" and gone.withdrawn_at is not None


def test_command_prints_a_summary(db, capsys):
    from django.core.management import call_command

    call_command("import_osm", str(SMALL), "--region", "Maryland")
    out = capsys.readouterr().out
    assert "kept 78" in out and "below_min_area 9" in out
