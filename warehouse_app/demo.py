"""Demo data of the warehouse service: the small OSM extract, and the demo user as owner (answers every quote)."""
from pathlib import Path

from django.conf import settings

from warehouse_app.models import Facility
from warehouse_app.services.accounts import role_set

DATA = Path(__file__).resolve().parent / "data" / "osm"


def load(*, user, workspace, stdout):
    """Import the small Baltimore extract when the directory is empty (a re-run changes nothing)."""
    # imported here: the importer's libraries (osmium, shapely with numpy, pyproj) would otherwise load in every
    # web worker, which registers this module at start (config.demo), for about 25 MiB each
    from warehouse_app.services.osm_import import osm_import

    if not Facility.objects.exists():
        osm_import(path=DATA / "baltimore-small.osm.pbf", region="Maryland", country="United States",
                   progress=lambda *_: None)
    role_set(user=user, role="owner")
    stdout.write(f"  Warehouses: {Facility.objects.count()} facilities at {settings.SITE_URL.rstrip('/')}/warehouses/ "
                 "(the demo user is owner: it answers every rate request; "
                 "`manage.py import_osm warehouse_app/data/osm/liechtenstein-autauga.osm.pbf` adds the larger extract)")
