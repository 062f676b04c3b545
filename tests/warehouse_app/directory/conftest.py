from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "warehouse_app" / "data" / "osm"
SMALL = DATA / "baltimore-small.osm.pbf"
LARGE = DATA / "liechtenstein-autauga.osm.pbf"


def quiet(*_):
    """Progress lines are not what these tests look at."""


@pytest.fixture
def small(db):
    from warehouse_app.services.osm_import import osm_import

    return osm_import(path=SMALL, region="Maryland", country="United States", progress=quiet)


@pytest.fixture
def large(db):
    from warehouse_app.services.osm_import import osm_import

    return osm_import(path=LARGE, progress=quiet)
