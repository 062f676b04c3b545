import factory
from factory.django import DjangoModelFactory

from warehouse_app.models import Facility


class FacilityFactory(DjangoModelFactory[Facility]):
    class Meta:
        model = Facility

    slug = factory.Sequence(lambda n: f"depot-{n}")
    osm_id = factory.Sequence(lambda n: 900000 + n)
    name = factory.Sequence(lambda n: f"Depot {n}")
    type_code = "warehouse"
    city = "Vaduz"
    region = "Oberland"
    country = "Liechtenstein"
    floor_area_m2 = 2500.0
    lat = 47.14
    lon = 9.52
    outline = factory.LazyAttribute(lambda o: {"type": "Polygon", "coordinates": [[
        [o.lon, o.lat], [o.lon + 0.001, o.lat], [o.lon + 0.001, o.lat + 0.0005], [o.lon, o.lat + 0.0005], [o.lon, o.lat]]]})
