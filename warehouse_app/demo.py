"""Demo data of the warehouse service: both OSM extracts, and the demo user as owner (answers every quote)."""
from pathlib import Path

from warehouse_app.models import Facility
from warehouse_app.services.accounts import role_set
from warehouse_app.services.osm_import import osm_import

DATA = Path(__file__).resolve().parent / "data" / "osm"


def load(*, user, workspace, stdout):
    if not Facility.objects.exists():
        osm_import(path=DATA / "baltimore-small.osm.pbf", region="Maryland", country="United States",
                   progress=lambda *_: None)
        osm_import(path=DATA / "liechtenstein-autauga.osm.pbf", progress=lambda *_: None)
    role_set(user=user, role="owner")
    stdout.write(f"  Warehouses: {Facility.objects.count()} facilities at http://localhost:8000/warehouses/ "
                 "(the demo user is owner: it answers every rate request)")
