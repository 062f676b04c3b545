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
# Regions, types, cities, operators and totals change only at an import or a claim: each web process keeps them
# (config.local_cache) until the refresh's new version, read at most every WAREHOUSE_LOCAL_CHECK_SECONDS.
WAREHOUSE_LOCAL_CHECK_SECONDS = env.float("WAREHOUSE_LOCAL_CHECK_SECONDS", default=1.0)
WAREHOUSE_FACETS_TTL_SECONDS = env.float("WAREHOUSE_FACETS_TTL_SECONDS", default=300.0)
# What searches found (pages of rows, counts by filter set, the ordered ids a text search matched), kept the same
# way: at most this many bytes per process (1,250 bytes counted a row with its HTML and JSON, 36 an id), the least
# recently used first out. 4 MiB holds about 170 pages of 20.
WAREHOUSE_SEARCH_CACHE_BYTES = env.int("WAREHOUSE_SEARCH_CACHE_BYTES", default=4 * 1024 * 1024)
# A region page's map (the outlines of its largest facilities, an SVG document), built once and kept the same way:
# at most this many bytes per process, plain and gzipped (about 0.75 MiB a region with the full 2,000 outlines).
WAREHOUSE_REGION_MAP_CACHE_BYTES = env.int("WAREHOUSE_REGION_MAP_CACHE_BYTES", default=8 * 1024 * 1024)
# Directory pages as a visitor without cookies sees them (warehouse_app/pages/kept.py), kept the same way: at most
# this many bytes per process (a search page of 25 rows is about 20 KiB).
WAREHOUSE_PAGE_CACHE_BYTES = env.int("WAREHOUSE_PAGE_CACHE_BYTES", default=2 * 1024 * 1024)
