"""The import on the larger extract: places from admin boundaries, areas, types, overrides."""
import pytest
from django.core.management import call_command
from django.db.models import Count
from pyproj import Geod
from shapely.geometry import shape

from tests.warehouse_app.directory.conftest import LARGE, SMALL
from warehouse_app.models import Facility, ImportRun

pytestmark = pytest.mark.django_db


def test_counts_types_and_skips(large):
    assert large.kept == large.created == 281
    assert large.skipped["below_min_area"] == 110 and large.skipped["not_warehouse_like"] == 17812
    types = dict(Facility.objects.values_list("type_code").annotate(n=Count("id")))
    assert types == {"commercial": 85, "hangar": 1, "industrial": 191, "warehouse": 4}
    assert Facility.objects.filter(floor_area_m2__lt=150).count() == 0
    run = ImportRun.objects.get()
    assert run.source_file == LARGE.name and run.finished_at and run.skipped["below_min_area"] == 110


def test_regions_countries_and_cities_come_from_enclosing_boundaries(large):
    regions = {(r["region"], r["country"]): r["n"] for r in
               Facility.objects.values("region", "country").annotate(n=Count("id"))}
    # Liechtenstein has two level-5 regions; the Autauga part carries no closed country boundary
    assert regions == {("Oberland", "Liechtenstein"): 167, ("Unterland", "Liechtenstein"): 36,
                       ("Autauga County", ""): 78}
    vaduz = Facility.objects.filter(city="Vaduz")
    assert vaduz.count() == 17 and all(f.region == "Oberland" for f in vaduz)
    # most outlines carry no addr:city: the municipality boundary names them
    from_boundary = [f for f in Facility.objects.exclude(city="") if "addr:city" not in f.tags]
    assert len(from_boundary) > 100
    assert Facility.objects.filter(region="Autauga County", city="").count() == 78


def test_areas_match_geodesic_areas(large):
    geod = Geod(ellps="WGS84")
    for facility in [*Facility.objects.order_by("-floor_area_m2")[:3], Facility.objects.get(type_code="hangar")]:
        geodesic = abs(geod.geometry_area_perimeter(shape(facility.outline))[0])
        assert facility.floor_area_m2 == pytest.approx(geodesic, rel=0.002)


def test_country_override_and_two_extracts_side_by_side(db, capsys):
    call_command("import_osm", str(LARGE), "--country", "Somewhere")
    call_command("import_osm", str(SMALL), "--region", "Maryland", "--country", "United States")
    out = capsys.readouterr().out
    assert "kept 281" in out and "kept 78" in out
    assert Facility.objects.filter(country="Somewhere").count() == 281
    assert Facility.objects.filter(status="active").count() == 359
    # re-importing one file withdraws nothing of the other
    call_command("import_osm", str(SMALL), "--region", "Maryland", "--country", "United States")
    assert Facility.objects.filter(status="withdrawn").count() == 0
    assert ImportRun.objects.count() == 3


def test_missing_file_is_a_command_error(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No such file"):
        call_command("import_osm", "/nonexistent.osm.pbf")
    assert not Facility.objects.exists() and not ImportRun.objects.exists()
