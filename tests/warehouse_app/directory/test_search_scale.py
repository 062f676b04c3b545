"""Search at scale: what each search and aggregate costs in statements, how PostgreSQL plans the searches the
benchmark runs (bench/warehouse.py), counts past the exact-count limit, and the facets computed at import."""
import re

import pytest
from django.db import connection
from django.db.models import Q
from django.test import Client
from django.test.utils import CaptureQueriesContext

from warehouse_app.models import DirectoryFacet, Facility
from warehouse_app.services import directory

pytestmark = pytest.mark.django_db

# the searches of bench/warehouse.py
BENCH_SEARCHES = ["type=industrial", "region=oberland&min_area=1000",
                  "country=Liechtenstein&type=commercial&max_area=5000", "q=amazon"]


def reference(**filters):
    """The same search written plainly on the ORM: what the answers must equal."""
    return Facility.objects.filter(status="active", **filters).order_by("-floor_area_m2", "slug")


def text(q):
    return Q(name__icontains=q) | Q(city__icontains=q) | Q(operator__icontains=q) | Q(slug__icontains=q)


def scale_copies(copies: int) -> int:
    """Copies of the imported facilities with their outlines (as the benchmark's scale set), then the import's
    post-steps."""
    real = list(Facility.objects.all())
    Facility.objects.bulk_create([
        Facility(slug=f"synthetic-{k}-{f.slug}"[:120], osm_type=f.osm_type, osm_id=-(k * 10**10 + f.osm_id),
                 name=f.name, type_code=f.type_code, operator=f.operator, city=f.city, region=f.region,
                 country=f.country, floor_area_m2=f.floor_area_m2, lat=f.lat, lon=f.lon, outline=f.outline, tags=f.tags,
                 source_file="SYNTHETIC test copy") for k in range(1, copies + 1) for f in real], batch_size=5000)
    directory.facets_refresh()
    directory.facilities_analyze()
    return Facility.objects.count()


def facility_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if '"warehouse_app_facility"' in q["sql"] and not q["sql"].startswith("EXPLAIN")]


def test_facets_are_computed_at_import_and_read_without_touching_facilities(api, small, large,
                                                                              django_assert_max_num_queries):
    assert set(DirectoryFacet.objects.values_list("kind", flat=True)) == {"region", "city", "type"}
    oberland = DirectoryFacet.objects.get(kind="region", region="Oberland")
    assert oberland.country == "Liechtenstein" and oberland.facility_count == 167
    with CaptureQueriesContext(connection) as ctx, django_assert_max_num_queries(1):
        regions = api.get("/api/regions").json()["results"]
    assert facility_reads(ctx.captured_queries) == []
    assert {(r["country"], r["region"]): r["facility_count"] for r in regions} == {
        ("", "Autauga County"): 78, ("Liechtenstein", "Oberland"): 167, ("Liechtenstein", "Unterland"): 36,
        ("United States", "Maryland"): 78}
    for path in ("/api/facility-types", "/api/cities", "/api/operators", "/api/health"):
        with django_assert_max_num_queries(3):
            assert api.get(path).status_code == 200
    assert api.get("/api/health").json()["dataset"]["facilities"] == 359


def test_each_bench_search_runs_at_most_four_statements_and_answers_as_the_plain_query(
        api, small, large, django_assert_max_num_queries):
    for search in BENCH_SEARCHES:
        with django_assert_max_num_queries(4):
            body = api.get(f"/api/warehouses/search?{search}").json()
        assert body["unapplied_filters"] == [] and body["count_is_estimate"] is False
    body = api.get("/api/warehouses/search?country=liechtenstein&type=Commercial&max_area=5000&page_size=50").json()
    expected = reference(country__iexact="Liechtenstein", type_code="commercial", floor_area_m2__lte=5000)
    assert body["count"] == expected.count() == 85
    assert [f["slug"] for f in body["results"]] == [f.slug for f in expected[:50]]


def test_a_text_search_pages_its_matches_in_the_search_order(api, small, large):
    expected = [f.slug for f in reference().filter(text("vaduz"))]
    assert len(expected) > 15
    pages = [api.get(f"/api/warehouses/search?q=VADUZ&page_size=5&page={n}").json() for n in (1, 2, 3)]
    assert [f["slug"] for page in pages for f in page["results"]] == expected[:15]
    assert pages[0]["count"] == len(expected) and not pages[0]["count_is_estimate"]
    resp = api.get("/api/warehouses/search?q=vaduz&page=40")
    assert resp.status_code == 404 and "past the end" in resp.json()["error"]
    assert api.get("/api/warehouses/search?q=no-such-text").json()["count"] == 0


@pytest.mark.postgres
def test_a_text_search_keeps_its_ordered_matches_so_later_pages_cost_one_statement(
        api, small, large, django_assert_num_queries):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): elsewhere a text search is a plain filter")
    expected = [f.slug for f in reference().filter(text("vaduz"))]
    first = api.get("/api/warehouses/search?q=vaduz&page_size=5").json()
    with django_assert_num_queries(1):  # the page's rows by id
        third = api.get("/api/warehouses/search?q=vaduz&page_size=5&page=3").json()
    assert [f["slug"] for f in first["results"] + third["results"]] == expected[:5] + expected[10:15]
    assert third["count"] == len(expected) and third["count_is_estimate"] is False


def test_the_list_pages_by_slug_with_the_count(api, small, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):
        body = api.get("/api/warehouses?page=4&page_size=25").json()
    assert body["count"] == 78 and body["count_is_estimate"] is False and len(body["results"]) == 3
    assert [f["slug"] for f in body["results"]] == [f.slug for f in reference().order_by("slug")[75:]]


@pytest.mark.postgres
def test_the_bench_searches_are_served_by_indexes(api, small, large, settings):
    """With a few thousand rows per value and fresh statistics, the planner answers every statement of the
    benchmark's searches from an index (at 1,000,000 facilities they take the estimated-count path; a lower
    limit takes it here)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    assert scale_copies(80) == 359 * 81
    with connection.cursor() as cursor:
        # the VACUUM after an import merges the rows just written into the trigram indexes (their pending
        # lists); a test transaction cannot VACUUM, so it merges them itself
        cursor.execute("SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i JOIN pg_class c ON "
                       "c.oid = i.indexrelid WHERE c.relname LIKE 'facility_%_trgm'")
    settings.WAREHOUSE_SEARCH_EXACT_COUNT = 1000
    for search in BENCH_SEARCHES:
        with CaptureQueriesContext(connection) as ctx:
            assert api.get(f"/api/warehouses/search?{search}").status_code == 200
        plans = []
        for sql in facility_reads(ctx.captured_queries):
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN {sql}")
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
        assert plans, search
        for plan in plans:
            assert "Seq Scan" not in plan and "Index" in plan, f"{search}\n{plan}"
        if search.startswith("q="):
            assert any("_trgm" in plan for plan in plans), plans  # the trigram indexes of migration 0003
        else:
            assert any("_search" in plan for plan in plans), plans  # the facility_<field>_search indexes


@pytest.mark.postgres
def test_past_the_limit_the_count_is_the_planners_estimate(api, small, large, settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    scale_copies(20)
    settings.WAREHOUSE_SEARCH_EXACT_COUNT = 500
    exact = reference(type_code="industrial").count()
    body = api.get("/api/warehouses/search?type=Industrial").json()
    assert body["count_is_estimate"] is True and exact / 2 < body["count"] < exact * 2
    assert [f["slug"] for f in body["results"]] == [f.slug for f in reference(type_code="industrial")[:20]]
    # a text search past the limit: estimated count, and still the true top of the search order
    expected = reference().filter(text("industrial"))
    for page in (1, 3):
        body = api.get(f"/api/warehouses/search?q=industrial&page={page}").json()
        assert body["count_is_estimate"] is True and body["count"] > 500
        assert [f["slug"] for f in body["results"]] == [f.slug for f in expected[(page - 1) * 20:page * 20]]
    settings.WAREHOUSE_SEARCH_EXACT_COUNT = 100_000
    body = api.get("/api/warehouses/search?type=industrial").json()
    assert body["count_is_estimate"] is False and body["count"] == exact


@pytest.mark.postgres
def test_an_area_bound_is_estimated_from_the_columns_statistics_without_planning_again(api, small, large, settings):
    """Past the limit, a search with area bounds is counted as the planner counts it (the estimate without the
    bounds times the share the column's statistics give them), and a new bound costs no EXPLAIN."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    scale_copies(20)
    settings.WAREHOUSE_SEARCH_EXACT_COUNT = 100
    api.get("/api/warehouses/search?type=industrial&min_area=1")  # the estimate without bounds, kept
    estimated = 0
    for bounds in ("min_area=700", "min_area=2500.5", "max_area=900", "min_area=300&max_area=4000"):
        with CaptureQueriesContext(connection) as ctx:
            body = api.get(f"/api/warehouses/search?type=industrial&{bounds}").json()
        assert [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("EXPLAIN")] == []
        with connection.cursor() as cursor:  # what the planner says of the same statement
            statements = directory.SearchStatements.of(("type", *(b.split("=")[0] for b in bounds.split("&"))))
            values = ("industrial", *(float(b.split("=")[1]) for b in bounds.split("&")))
            cursor.execute(statements.estimate_sql, statements.params(values))
            planned = directory._plan_rows(cursor.fetchone()[0])
        exact = reference(type_code="industrial", **{
            {"min_area": "floor_area_m2__gte", "max_area": "floor_area_m2__lte"}[b.split("=")[0]]: float(b.split("=")[1])
            for b in bounds.split("&")}).count()
        assert body["count_is_estimate"] is (body["count"] > 100), bounds
        if body["count_is_estimate"]:
            estimated += 1
            assert abs(body["count"] - planned) <= max(3, planned * 0.1), (bounds, body["count"], planned, exact)
    assert estimated >= 3


def test_the_search_page_pages_through_the_search_service(small, django_assert_max_num_queries):
    """The HTML search page shares the API's search: same order, bounded count, kept pages."""
    client = Client()
    expected = [f.slug for f in reference(region="Maryland")]
    first = client.get("/warehouses/search/?region=maryland")
    assert first.status_code == 200
    html = first.content.decode()
    assert f"{len(expected)} facilities." in html and "Page 1 of 4" in html and "page=2" in html
    assert [s for s in expected if f"/warehouses/{s}/" in html] == expected[:25]
    with django_assert_max_num_queries(0):  # the same page again: kept by the process, facets too
        again = client.get("/warehouses/search/?region=maryland").content.decode()
    assert [s for s in expected if f"/warehouses/{s}/" in again] == expected[:25] and "Page 1 of 4" in again
    last = client.get("/warehouses/search/?region=maryland&page=4").content.decode()
    assert [s for s in expected if f"/warehouses/{s}/" in last] == expected[75:]
    assert "Page 4 of 4" in last and "previous" in last and "next" not in last
    # anything but a page number is the first page; past the last one is not found, however long the number
    for page in ("abc", "0", "-1", "²"):
        assert "Page 1 of 4" in client.get(f"/warehouses/search/?region=maryland&page={page}").content.decode()
    for page in ("5", "99999999999", "9" * 5000):
        assert client.get(f"/warehouses/search/?region=maryland&page={page}").status_code == 404


@pytest.mark.postgres
def test_the_search_page_says_about_when_the_count_is_estimated(small, large, settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): elsewhere every count is exact")
    scale_copies(20)
    settings.WAREHOUSE_SEARCH_EXACT_COUNT = 500
    html = Client().get("/warehouses/search/?type=industrial").content.decode()
    assert re.search(r"About [\d,]+ facilities\.", html) and re.search(r"Page 1 of about [\d,]+", html)
    top = [f.slug for f in reference(type_code="industrial")[:25]]
    assert all(f"/warehouses/{slug}/" in html for slug in top)


def test_a_claim_refreshes_the_operator_facets(api, small):
    from tests.factories import UserFactory
    from warehouse_app.services.accounts import role_set

    assert not DirectoryFacet.objects.filter(kind="operator").exists()
    bwi2 = Facility.objects.get(type_code="warehouse")
    role_set(user=UserFactory(name="Harbour Logistics"), role="operator", facility_slugs=[bwi2.slug])
    facet = DirectoryFacet.objects.get(kind="operator")
    assert (facet.operator, facet.facility_count) == ("Harbour Logistics", 1)
    assert facet.floor_area_m2 == pytest.approx(bwi2.floor_area_m2)
    body = api.get("/api/warehouses/search?operator=harbour+logistics").json()
    assert body["unapplied_filters"] == [] and [f["slug"] for f in body["results"]] == [bwi2.slug]
