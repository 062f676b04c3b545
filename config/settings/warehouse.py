"""Settings of the warehouse directory."""
from .core import env

# Import rule (docs/warehouse-directory.md): buildings of these types are kept; a building of any type
# tagged industrial=warehouse or landuse=warehouse is kept as a warehouse.
WAREHOUSE_BUILDING_TYPES = ("warehouse", "industrial", "commercial", "storage", "hangar", "manufacture", "depot",
                            "logistics", "distribution_center")
# Smaller outlines are sheds, kiosks and plant parts (tanks, towers), not rentable storage.
WAREHOUSE_MIN_AREA_M2 = env.float("WAREHOUSE_MIN_AREA_M2", default=150.0)
WAREHOUSE_ATTRIBUTION = "© OpenStreetMap contributors"
WAREHOUSE_ATTRIBUTION_URL = "https://www.openstreetmap.org/copyright"
WAREHOUSE_DATA_LICENSE = "ODbL-1.0"
WAREHOUSE_BUILD_STAMP = env("BUILD_STAMP", default="dev")
# Search counts are exact up to this many matches; past it PostgreSQL answers with the planner's estimate
# (`count_is_estimate: true`), so a broad search never counts a million rows.
WAREHOUSE_SEARCH_EXACT_COUNT = env.int("WAREHOUSE_SEARCH_EXACT_COUNT", default=10_000)
