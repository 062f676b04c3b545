"""Reading the directory: the search filters, paging with a bounded count, and the facets computed at import.

Design and figures: docs/performance.md (warehouse search).
"""
import json
import math
from bisect import bisect_right
from sys import intern
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Exists, Q, Sum
from django.utils import timezone

from config.errors import NotFound
from config.jobs import enqueue
from config.local_cache import LocalCache
from warehouse_app.models import DirectoryFacet, Facility

FILTERS = ("region", "country", "city", "type", "operator", "min_area", "max_area", "q")
PAGING = ("page", "page_size")
MAX_PAGE = 1_000_000_000  # keeps every offset far inside the database's 64-bit integers
AREA = ("min_area", "max_area")  # the bounds a search may set on the floor area
FIELD = {"region": "region", "country": "country", "city": "city", "type": "type_code", "operator": "operator"}
# "some active facility records this field", read from the facets instead of the facility table
RECORDED = {"region": Q(kind="region") & ~Q(region=""), "country": Q(kind="region") & ~Q(country=""),
            "city": Q(kind="city"), "type": Q(kind="type") & ~Q(type_code=""), "operator": Q(kind="operator")}
# facet kind → the facility columns it groups by; the last one must be set for city and operator rows
FACET_GROUPS = {"region": ("country", "region"), "city": ("country", "region", "city"), "type": ("type_code",),
                "operator": ("operator",)}


def active():
    """Facilities still in the map data (withdrawn ones keep only their own page)."""
    return Facility.objects.filter(status=Facility.Status.ACTIVE)


def recorded_fields(*, names) -> set:
    """Which of these search fields some active facility records: one query on the facets for all five fields,
    kept with the facet lists until the next refresh."""
    def read():
        checks = {f"has_{name}": Exists(DirectoryFacet.objects.filter(condition))
                  for name, condition in RECORDED.items()}
        row = next(iter(DirectoryFacet.objects.order_by().annotate(**checks).values(*checks)[:1]), None) or {}
        return frozenset(name for name in RECORDED if row.get(f"has_{name}"))

    return facet_lists.get_or_compute("recorded", read) & set(names)


# how each applied filter narrows the facilities
LOOKUPS = {**{name: f"{field}__iexact" for name, field in FIELD.items()},
           "min_area": "floor_area_m2__gte", "max_area": "floor_area_m2__lte"}


@dataclass
class Search:
    key: tuple  # the filters applied, (name, value) as given: what the search caches are keyed by
    unapplied: list

    @property
    def text(self) -> bool:
        return any(name == "q" for name, _ in self.key)

    @cached_property
    def queryset(self):
        """Built only when a search reads the database (a kept page does not)."""
        return filtered(self.key)


def filtered(key: tuple):
    """Active facilities narrowed by a search's applied filters, in the search order."""
    qs = active()
    for name, value in key:
        if name == "q":
            # UPPER(col) LIKE '%Q%': the trigram indexes of migration 0003 on PostgreSQL
            qs = qs.filter(Q(name__icontains=value) | Q(city__icontains=value) | Q(operator__icontains=value)
                           | Q(slug__icontains=value))
        else:
            # UPPER(col) = UPPER(value) on PostgreSQL: served by the facility_<field>_search indexes
            qs = qs.filter(**{LOOKUPS[name]: value})
    return qs.order_by("-floor_area_m2", "slug")


class FacilityRow(NamedTuple):
    """A facility as list and search pages show it (the API's rows, the HTML rows): a plain row rather than a
    model instance, a third of the memory and none of the construction (outline and tags are never loaded)."""

    slug: str
    name: str
    osm_type: str
    osm_id: int
    type_code: str
    operator: str
    city: str
    region: str
    country: str
    floor_area_m2: float
    lat: float
    lon: float
    status: str


def facility_row(values) -> FacilityRow:
    """A row with its few-valued columns (type, places, operator, status) interned: one string object per value
    in the process, not one per row a page keeps (a kept row: about 450 bytes instead of 700)."""
    slug, name, osm_type, osm_id, type_code, operator, city, region, country, area, lat, lon, status = values
    return FacilityRow(slug, name, intern(osm_type), osm_id, intern(type_code), intern(operator), intern(city),
                       intern(region), intern(country), area, lat, lon, intern(status))


def facility_rows(queryset) -> list[FacilityRow]:
    return [facility_row(row) for row in queryset.values_list(*FacilityRow._fields)]


class SearchStatements:
    """The SQL of one filter shape (which filters, not their values), compiled by the ORM once per process and
    then run with the values bound: a search nobody asked before costs what a kept one costs to plan, not a
    queryset built, cloned and compiled three times (docs/performance.md, "First-time searches").

    The shape's queryset is compiled with a stand-in per value; its parameters say where each value goes."""

    def __init__(self, names: tuple):
        stand_ins = tuple(-1e9 - i if name in AREA else f"\x00{i}"
                          for i, name in enumerate(names))
        self.names = names
        qs = filtered(tuple(zip(names, stand_ins)))
        select, params = qs.values_list(*FacilityRow._fields).query.sql_with_params()
        where, where_params = qs.order_by().values("pk").query.sql_with_params()
        assert params == where_params, "one WHERE for the page and the count"
        slots = {value: i for i, value in enumerate(stand_ins)}
        self.bind = tuple((slots[p], None) if p in slots else (None, p) for p in params)
        self.page_sql = f"{select} LIMIT %s OFFSET %s"
        self.estimate_sql = f"EXPLAIN (FORMAT JSON) {where}"
        self.count_sql = f"SELECT COUNT(*) FROM ({where} LIMIT %s) AS matches"

    def params(self, values: tuple) -> list:
        return [values[slot] if slot is not None else fixed for slot, fixed in self.bind]

    def rows(self, values: tuple, offset: int, limit: int) -> list[FacilityRow]:
        with connection.cursor() as cursor:
            cursor.execute(self.page_sql, [*self.params(values), limit, offset])
            return [facility_row(row) for row in cursor.fetchall()]

    def count(self, values: tuple) -> tuple[int, bool]:
        """As `_count`: the planner's estimate past the exact-count limit, else the matches up to limit + 1."""
        limit = settings.WAREHOUSE_SEARCH_EXACT_COUNT
        estimate = self.estimate(values)
        if estimate > limit:
            return estimate, True
        with connection.cursor() as cursor:
            cursor.execute(self.count_sql, [*self.params(values), limit + 1])
            counted = cursor.fetchone()[0]
        return counted, counted > limit

    def estimate(self, values: tuple) -> int:
        """The planner's row estimate. The area bounds change from one search to the next more than anything, and
        an EXPLAIN costs more than the page it counts (planning, 0.9 ms of the machine's CPU): with bounds, it is
        the kept estimate of the same search without them times the share of facilities the bounds leave by the
        column's own statistics, the product the planner itself makes (`area_share`)."""
        given = dict(zip(self.names, values))
        share = area_share(low=given.get("min_area"), high=given.get("max_area")) if set(AREA) & set(given) else None
        if share is None:
            return self._planned(values)
        fields = tuple((name, value) for name, value in given.items() if name not in AREA)
        shape = SearchStatements.of(tuple(name for name, _ in fields))
        rows = search_results.get_or_compute(("estimate", fields),
                                             lambda: shape._planned(tuple(value for _, value in fields)))
        return round(rows * share)

    def _planned(self, values: tuple) -> int:
        with connection.cursor() as cursor:
            cursor.execute(self.estimate_sql, self.params(values))
            return _plan_rows(cursor.fetchone()[0])

    @classmethod
    def of(cls, names: tuple) -> "SearchStatements":
        found = _statements.get(names)
        if found is None:  # at most one per combination of the seven field filters
            found = _statements[names] = cls(names)
        return found


_statements: dict[tuple, SearchStatements] = {}


def area_share(*, low: float | None, high: float | None) -> float | None:
    """The share of facilities whose floor area lies within [low, high] by PostgreSQL's statistics of the column
    (kept with the facets): its most common values with their frequencies, and the histogram of the others,
    interpolated within a bucket, as the planner reads them. None without statistics (never analyzed)."""
    stats = facet_lists.get_or_compute("area-statistics", _area_statistics)
    if stats is None:
        return None
    null_share, common, bounds = stats
    low = -math.inf if low is None else low
    high = math.inf if high is None else high
    share = sum(frequency for value, frequency in common if low <= value <= high)
    if len(bounds) > 1:
        others = 1.0 - null_share - sum(frequency for _, frequency in common)
        share += others * max(0.0, _histogram_position(bounds, high) - _histogram_position(bounds, low))
    return min(max(share, 0.0), 1.0)


def _histogram_position(bounds: list, value: float) -> float:
    """Where a value falls in a histogram of equal-count buckets, from 0 (below the first bound) to 1."""
    if value <= bounds[0]:
        return 0.0
    if value >= bounds[-1]:
        return 1.0
    i = bisect_right(bounds, value) - 1
    width = bounds[i + 1] - bounds[i]
    return (i + ((value - bounds[i]) / width if width > 0 else 0.0)) / (len(bounds) - 1)


def _area_statistics():
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT null_frac, most_common_vals::text::float8[], most_common_freqs, "
                       "histogram_bounds::text::float8[] FROM pg_stats WHERE schemaname = current_schema() AND "
                       "tablename = %s AND attname = 'floor_area_m2' AND NOT inherited",
                       [Facility._meta.db_table])
        row = cursor.fetchone()
    if row is None:
        return None
    null_share, values, frequencies, bounds = row
    return float(null_share or 0), list(zip(values or [], frequencies or [])), list(bounds or [])


def _plan_rows(plan) -> int:
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


def _search(params) -> Search:
    """The filters of a search: every parameter either narrows it or is named in `unapplied` with a reason."""
    unapplied, applied = [], []
    for name in params:
        if name not in FILTERS and name not in PAGING:
            unapplied.append({"name": name, "reason": "unknown filter"})
    given = {name: (params.get(name) or "").strip() for name in FIELD}
    recorded = recorded_fields(names=[name for name, value in given.items() if value])
    for name in FIELD:
        if not given[name]:
            continue
        if name not in recorded:
            unapplied.append({"name": name, "reason": f"no facility records a {name}"})
            continue
        applied.append((name, given[name]))
    for name in AREA:
        raw = (params.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
            if value < 0 or value != value:
                raise ValueError
        except ValueError:
            unapplied.append({"name": name, "reason": "not a non-negative number of square metres"})
            continue
        applied.append((name, value))
    q = (params.get("q") or "").strip()
    if q:
        applied.append(("q", q))
    return Search(tuple(applied), unapplied)


# a FacilityRow as kept in memory (about 450 bytes), with its HTML row and its JSON once a page gives them
PAGE_ROW_BYTES = 1250


@dataclass
class Page:
    rows: list
    count: int
    count_is_estimate: bool
    number: int
    size: int

    @property
    def pages(self) -> int:
        """How many pages the count makes (about, when the count is an estimate)."""
        return max(1, math.ceil(self.count / self.size))

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages


def facilities_estimate(*, queryset) -> int:
    """The planner's row estimate for a queryset (PostgreSQL's EXPLAIN: planning only, nothing is read)."""
    return _plan_rows(queryset.order_by().values("pk").explain(format="json"))


def facilities_count(*, queryset, key: tuple | None = None) -> tuple[int, bool]:
    """(count, is_estimate). Exact up to WAREHOUSE_SEARCH_EXACT_COUNT matches. On PostgreSQL a search the
    planner expects to match more is not counted: its estimate (from the statistics the ANALYZE after each import
    keeps fresh) is the answer. Below that, the count reads at most the limit + 1 matches. With a search's `key`
    the answer is kept until the next refresh of the facets (`search_results`)."""
    if key is None:
        return _count(queryset)
    return search_results.get_or_compute(("count", key), lambda: _count(queryset))


def _count(queryset) -> tuple[int, bool]:
    qs = queryset.order_by()
    if connection.vendor != "postgresql":
        return qs.count(), False
    limit = settings.WAREHOUSE_SEARCH_EXACT_COUNT
    estimate = facilities_estimate(queryset=qs)
    if estimate > limit:
        return estimate, True
    counted = qs[:limit + 1].count()
    return (counted, False) if counted <= limit else (counted, True)


def _text_matches(queryset, key: tuple | None) -> tuple | list:
    """The ids a text search matches in the search order (a tuple, kept in `search_results` under the search's
    key), or, past the exact-count limit, the first limit + 1 matches found as (id, floor area, slug), unordered
    by the database and sorted here (not kept)."""
    def collect():
        limit = settings.WAREHOUSE_SEARCH_EXACT_COUNT
        found = list(queryset.order_by().values_list("pk", "floor_area_m2", "slug")[:limit + 1])
        found.sort(key=lambda m: (-m[1], m[2]))  # the search order; slugs are ASCII, code-point order
        return found if len(found) > limit else tuple(m[0] for m in found)

    if key is None:
        return collect()
    return search_results.get_or_compute(("text", key), collect, keep=lambda found: isinstance(found, tuple),
                                         size=lambda ids: 64 + 36 * len(ids))


def _text_page(queryset, *, page: int, page_size: int, key: tuple | None = None) -> Page:
    """A text search (`q`) on PostgreSQL. The planner can tell neither how many rows a substring matches nor
    where they fall in the search order (walking the order index for a word found only on small buildings reads
    the whole table), so the matches are collected first, unordered, at most the exact-count limit + 1 (id,
    floor area, slug): up to the limit they are counted, ordered and paged here (and the ordered ids kept, so
    the next pages and the same search again cost one query) and one more query loads the page. Past it the
    count is the planner's estimate and the page comes from bitmap scans only, bounded below by the floor area
    the collected matches already reach: its cost follows the matches, never the table."""
    matches = _text_matches(queryset, key)
    offset = (page - 1) * page_size
    if isinstance(matches, tuple):
        ids = matches[offset:offset + page_size]
        if not ids and page > 1:
            raise NotFound(f"Page {page} is past the end ({math.ceil(len(matches) / page_size)} pages).")
        rows = ({row[0]: facility_row(row[1:]) for row in
                 queryset.filter(pk__in=ids).values_list("pk", *FacilityRow._fields)} if ids else {})
        return Page([rows[pk] for pk in ids if pk in rows], len(matches), False, page, page_size)
    count = max(facilities_estimate(queryset=queryset), len(matches))
    if offset + page_size <= len(matches):  # the true top (offset + page_size) all reach this floor area
        queryset = queryset.filter(floor_area_m2__gte=matches[offset + page_size - 1][1])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        rows = facility_rows(queryset[offset:offset + page_size])
        cursor.execute("SET LOCAL enable_indexscan = DEFAULT")  # inside a caller's transaction too
    if not rows:
        raise NotFound(f"Page {page} is past the end (about {math.ceil(count / page_size)} pages).")
    return Page(rows, count, True, page, page_size)


def facilities_page(*, queryset, page: int, page_size: int, text_search: bool = False,
                    key: tuple | None = None) -> Page:
    """One page of an ordered queryset; a page past the end is 404. A short or empty first page is its own
    count, so small results cost one query. `key` names a search whose count and text matches may be kept."""
    if text_search and connection.vendor == "postgresql":
        return _text_page(queryset, page=page, page_size=page_size, key=key)
    return _paged(lambda offset, limit: facility_rows(queryset[offset:offset + limit]),
                  lambda: facilities_count(queryset=queryset, key=key), page=page, page_size=page_size)


def _paged(rows_at, count, *, page: int, page_size: int) -> Page:
    offset = (page - 1) * page_size
    rows = rows_at(offset, page_size)
    if len(rows) < page_size and (rows or page == 1):
        return Page(rows, offset + len(rows), False, page, page_size)
    total, estimate = count()
    if not rows:
        pages = math.ceil(total / page_size)
        raise NotFound(f"Page {page} is past the end ({'about ' if estimate else ''}{pages} pages).")
    return Page(rows, total, estimate, page, page_size)


def _search_page(search: Search, *, page: int, page_size: int) -> Page:
    if search.text or connection.vendor != "postgresql":
        return facilities_page(queryset=search.queryset, page=page, page_size=page_size, text_search=search.text,
                               key=search.key)
    statements = SearchStatements.of(tuple(name for name, _ in search.key))
    values = tuple(value for _, value in search.key)
    return _paged(lambda offset, limit: statements.rows(values, offset, limit),
                  lambda: search_results.get_or_compute(("count", search.key), lambda: statements.count(values)),
                  page=page, page_size=page_size)


def facilities_search_page(*, params, page: int, page_size: int) -> tuple[Page, list]:
    """The search endpoint: (page, unapplied filters). A page is the same for everyone until the directory
    changes, so each process keeps the pages it served (`search_results`; a page past the end is not kept)."""
    search = _search(params)
    found = search_results.get_or_compute(("page", search.key, page, page_size),
                                          lambda: _search_page(search, page=page, page_size=page_size),
                                          size=PAGE_ROW_BYTES * page_size)
    return found, search.unapplied


def facets_refresh(*, kinds=tuple(FACET_GROUPS)) -> None:
    """Recompute the facet rows of these kinds from the active facilities (after an import or a claim). With the
    regions, the facilities a region's map draws may have changed: the maps are drawn again by a job."""
    with transaction.atomic():
        DirectoryFacet.objects.filter(kind__in=kinds).delete()
        for kind in kinds:
            columns = FACET_GROUPS[kind]
            qs = active()
            if kind in ("city", "operator"):
                qs = qs.exclude(**{columns[-1]: ""})
            groups = qs.order_by().values(*columns).annotate(n=Count("id"), area=Sum("floor_area_m2"))
            DirectoryFacet.objects.bulk_create(
                [DirectoryFacet(kind=kind, facility_count=g.pop("n"), floor_area_m2=g.pop("area") or 0, **g)
                 for g in groups], batch_size=1000)
        maps = "region" in kinds
        directory_caches_invalidate(maps=maps)
        # and again once readers can see the new rows; then the job draws the maps
        transaction.on_commit(lambda: directory_caches_invalidate(maps=maps))
        if maps:
            enqueue("warehouse_app.tasks.region_maps_publish")


def facility_change(*, facility, fields) -> Facility:
    """A staff change to a facility between imports (its status or operator, in admin): a withdrawal is dated as an
    import dates it, and the facets and every search a process kept are refreshed with it."""
    fields = list(fields)
    if "status" in fields:
        facility.withdrawn_at = timezone.now() if facility.status == Facility.Status.WITHDRAWN else None
        fields.append("withdrawn_at")
    with transaction.atomic():
        facility.save(update_fields=fields)
        facets_refresh()
    return facility


def facilities_analyze() -> None:
    """Fresh planner statistics after a bulk change: plans and count estimates depend on them. On PostgreSQL,
    outside a transaction, VACUUM too: it marks the new pages all-visible (index-only scans) and merges the rows
    just written into the trigram indexes (their pending lists)."""
    vacuum = connection.vendor == "postgresql" and not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(f"{'VACUUM (ANALYZE)' if vacuum else 'ANALYZE'} {Facility._meta.db_table}")
    directory_caches_invalidate(maps=False)  # what was kept from the statistics before (estimates, area shares)


# The directory changes only where the facets are refreshed (an import, an operator's claim, a staff change through
# `facility_change`): every web process keeps the facet lists and what searches found until the next refresh.
facet_lists = LocalCache("directory-facets", ttl=settings.WAREHOUSE_FACETS_TTL_SECONDS,
                         check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS", max_entries=32)
# counts by filter set, ordered ids by text search, pages of results
search_results = LocalCache("directory-searches", ttl=settings.WAREHOUSE_FACETS_TTL_SECONDS,
                            check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS", max_entries=4096,
                            max_bytes=settings.WAREHOUSE_SEARCH_CACHE_BYTES)

# directory pages as visitors without cookies see them (warehouse_app/pages/kept.py), by path and query string
visitor_pages = LocalCache("directory-pages", ttl=settings.WAREHOUSE_FACETS_TTL_SECONDS,
                           check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS", max_entries=512,
                           max_bytes=settings.WAREHOUSE_PAGE_CACHE_BYTES)

# the maps region pages frame (services/region_maps.py), by region in any case; drawing one holds all its outlines
region_map_documents = LocalCache("directory-region-maps", ttl=settings.WAREHOUSE_FACETS_TTL_SECONDS,
                         check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS", max_entries=256,
                         max_bytes=settings.WAREHOUSE_REGION_MAP_CACHE_BYTES, one_compute_at_a_time=True)


def directory_caches_invalidate(*, maps: bool = True) -> None:
    facet_lists.invalidate()
    search_results.invalidate()
    visitor_pages.invalidate()
    if maps:
        region_map_documents.invalidate()


def _facets(kind, *columns, order):
    return facet_lists.get_or_compute(kind, lambda: list(
        DirectoryFacet.objects.filter(kind=kind).values(*columns).order_by(*order)))


def regions() -> list[dict]:
    return _facets("region", "country", "region", "facility_count", "floor_area_m2", order=("country", "region"))


def facility_types() -> list[dict]:
    return _facets("type", "type_code", "facility_count", order=("type_code",))


def cities() -> list[dict]:
    return _facets("city", "city", "region", "country", "facility_count", order=("country", "city", "region"))


def operators() -> list[dict]:
    return _facets("operator", "operator", "facility_count", order=("operator",))


def dataset_totals() -> dict:
    """Active facilities and their combined floor area, as of the last refresh of the facets."""
    def read():
        totals = DirectoryFacet.objects.filter(kind="type").aggregate(n=Sum("facility_count"),
                                                                      area=Sum("floor_area_m2"))
        return {"facilities": totals["n"] or 0, "floor_area_m2": totals["area"] or 0}

    return dict(facet_lists.get_or_compute("totals", read))
