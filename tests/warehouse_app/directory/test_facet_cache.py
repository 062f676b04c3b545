"""Regions, types, cities, operators and totals, and what searches found (counts, text matches), change only at
a refresh of the facets (an import, a claim, a change in admin): each process keeps what it read, and every
process drops it when a refresh writes a new version."""
from django.db.models import Count

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


def test_a_search_keeps_its_count_and_pages_until_a_refresh(api, small, django_assert_num_queries):
    kind = Facility.objects.values("type_code").annotate(n=Count("id")).order_by("-n")[0]["type_code"]
    search = f"/api/warehouses/search?type={kind}&page_size=5"
    first = api.get(search).json()
    total = Facility.objects.filter(type_code=kind, status="active").count()
    assert first["count"] == total > 10 and first["count_is_estimate"] is False
    with django_assert_num_queries(1):  # the page; the count and the "is the field recorded" check are kept
        second = api.get(f"{search}&page=2").json()
    assert second["count"] == total
    with django_assert_num_queries(0):  # a page served before
        assert api.get(f"{search}&page=2").json() == second
    assert [f["slug"] for f in second["results"]] == list(Facility.objects.filter(
        type_code=kind).order_by("-floor_area_m2", "slug").values_list("slug", flat=True)[5:10])
    # an import withdraws facilities, then refreshes the facets: every kept count goes with them
    gone = list(Facility.objects.filter(type_code=kind).order_by("slug").values_list("pk", flat=True)[:2])
    Facility.objects.filter(pk__in=gone).update(status=Facility.Status.WITHDRAWN)
    assert api.get(search).json()["count"] == total  # not yet
    facets_refresh()
    assert api.get(search).json()["count"] == total - 2


def test_a_field_recorded_only_after_a_refresh_becomes_a_filter(api, small):
    body = api.get("/api/warehouses/search?operator=Harbour").json()
    assert body["unapplied_filters"] == [{"name": "operator", "reason": "no facility records a operator"}]
    Facility.objects.filter(pk=Facility.objects.order_by("slug").first().pk).update(operator="Harbour")
    facets_refresh()
    body = api.get("/api/warehouses/search?operator=Harbour").json()
    assert body["unapplied_filters"] == [] and body["count"] == 1


def test_a_staff_status_change_in_admin_refreshes_what_searches_and_lists_show(client, small):
    from tests.factories import UserFactory

    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    facility = Facility.objects.order_by("slug").first()
    before = client.get("/api/warehouses/search?region=Maryland&page_size=1").json()["count"]
    resp = client.post(f"/admin/warehouse_app/facility/{facility.pk}/change/",
                       {"operator": facility.operator, "status": "withdrawn"})
    assert resp.status_code == 302
    changed = Facility.objects.get(pk=facility.pk)
    assert changed.status == "withdrawn" and changed.withdrawn_at is not None  # dated as an import dates it
    assert client.get("/api/warehouses/search?region=Maryland&page_size=1").json()["count"] == before - 1
    assert client.get("/api/regions").json()["results"][0]["facility_count"] == before - 1
    resp = client.post(f"/admin/warehouse_app/facility/{facility.pk}/change/",
                       {"operator": facility.operator, "status": "active"})
    assert resp.status_code == 302 and Facility.objects.get(pk=facility.pk).withdrawn_at is None
    assert client.get("/api/warehouses/search?region=Maryland&page_size=1").json()["count"] == before


def test_list_rows_written_out_directly_equal_the_declared_serializer_fields(small, large):
    """FacilitySerializer writes list rows by hand for speed; they must stay what its declarations give."""
    from rest_framework import serializers

    from warehouse_app.api.serializers import FacilitySerializer

    rows = list(Facility.objects.defer("outline", "tags").order_by("slug"))
    assert {f.osm_type for f in rows} == {"way", "relation"} and any(not f.name for f in rows)
    declared = FacilitySerializer()
    assert FacilitySerializer(rows, many=True).data == [
        serializers.ModelSerializer.to_representation(declared, f) for f in rows]
