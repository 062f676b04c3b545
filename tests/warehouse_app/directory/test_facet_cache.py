"""Regions, types, cities, operators and totals change only at a refresh of the facets (an import or a claim):
each process keeps what it read, and every process drops it when a refresh writes a new version."""
from config.local_cache import MISSING, LocalCache
from warehouse_app.models import Facility
from warehouse_app.services.directory import facet_lists, facets_refresh


def test_facet_lists_are_read_once_and_kept_until_a_refresh(api, small, django_assert_num_queries):
    first = api.get("/api/regions").json()["results"]
    assert [r["region"] for r in first] == ["Maryland"]
    types = api.get("/api/facility-types").json()["results"]
    with django_assert_num_queries(0):
        assert api.get("/api/regions").json()["results"] == first
        assert api.get("/api/facility-types").json()["results"] == types
    Facility.objects.update(region="Chesapeake")  # rows changed without a refresh: the lists stay as they were
    assert api.get("/api/regions").json()["results"] == first
    facets_refresh()
    assert [r["region"] for r in api.get("/api/regions").json()["results"]] == ["Chesapeake"]
    assert api.get("/api/health").json()["dataset"]["facilities"] == first[0]["facility_count"]


def test_another_process_drops_its_lists_at_its_next_version_check(small, settings):
    settings.WAREHOUSE_LOCAL_CHECK_SECONDS = 0  # check the shared version on every read
    # the same cache as another web process holds it
    other = LocalCache(facet_lists.name, ttl=60, check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS")
    other.get("warm")  # reads the current version
    other.set("region", ["an old list"])
    assert other.get("region") == ["an old list"]
    facets_refresh()
    assert other.get("region") is MISSING
