"""Directory API edges and pages beyond the basics: browsing, pagination, operators, health, demo."""
import re
import io

import pytest
from django.test import Client

from tests.factories import UserFactory
from warehouse_app.models import Facility
from warehouse_app.services.accounts import role_set

pytestmark = pytest.mark.django_db


def test_health_before_any_import(api):
    body = api.get("/api/health").json()
    assert body["status"] == "ok" and body["dataset"]["facilities"] == 0
    assert body["dataset"]["imported_at"] is None and "OpenStreetMap" in body["attribution"]["text"]
    assert api.get("/api/regions").json()["results"] == []


def test_bad_numbers_are_named_not_ignored_and_change_nothing(api, small):
    body = api.get("/api/warehouses/search?min_area=-5&max_area=nan&type=industrial").json()
    assert {u["name"] for u in body["unapplied_filters"]} == {"min_area", "max_area"}
    assert body["count"] == Facility.objects.filter(type_code="industrial").count()
    assert api.get("/api/warehouses/search?page_size=0").status_code == 400


def test_operator_filter_applies_once_an_operator_is_known(api, small):
    bwi2 = Facility.objects.get(type_code="warehouse")
    # an operator account claims it: the facility takes the account's name (the map data has no operator)
    role_set(user=UserFactory(name="Amazon"), role="operator", facility_slugs=[bwi2.slug])
    body = api.get("/api/warehouses/search?operator=amazon").json()
    assert body["unapplied_filters"] == [] and [f["slug"] for f in body["results"]] == [bwi2.slug]
    ops = api.get("/api/operators").json()
    assert ops["results"] == [{"operator": "Amazon", "facility_count": 1}]


def test_withdrawn_facilities_leave_lists_but_keep_their_page(api, small):
    bwi2 = Facility.objects.get(type_code="warehouse")
    Facility.objects.filter(pk=bwi2.pk).update(status="withdrawn")
    assert api.get("/api/warehouses").json()["count"] == 77
    assert api.get("/api/warehouses/search?type=warehouse").json()["count"] == 0
    detail = api.get(f"/api/warehouses/{bwi2.slug}")
    assert detail.status_code == 200 and detail.json()["status"] == "withdrawn"
    assert api.get("/api/health").json()["dataset"]["withdrawn"] == 1


def test_browse_pages_paginate_and_attribute(small):
    client = Client()
    first = client.get("/warehouses/region/Maryland/").content.decode()
    assert "78 facilities" in first and "Page 1 of 4" in first and "page=2" in first
    second = client.get("/warehouses/region/Maryland/?page=2").content.decode()
    assert "Page 2 of 4" in second and "previous" in second
    typed = client.get("/warehouses/type/warehouse/").content.decode()
    assert "BWI2 Amazon Fulfillment Center" in typed and "1 facility." in typed
    for page in (first, typed, client.get("/warehouses/").content.decode(),
                 client.get("/warehouses/search/?min_area=oops").content.decode()):
        assert "OpenStreetMap contributors" in page and "ODbL" in page
        # scripts only from files (the CSP allows no inline script): the pages work without them
        assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/js/htmx.min.js" defer>']
    assert "not a non-negative number" in client.get("/warehouses/search/?min_area=oops").content.decode()


def test_demo_load_imports_the_small_extract_once(db):
    from warehouse_app import demo

    user, out = UserFactory(), io.StringIO()
    demo.load(user=user, workspace=None, stdout=out)
    assert Facility.objects.count() == 78 and "78 facilities" in out.getvalue()
    demo.load(user=user, workspace=None, stdout=io.StringIO())
    assert Facility.objects.count() == 78


def test_operator_names_with_a_slash_browse_and_link(small):
    bwi2 = Facility.objects.get(type_code="warehouse")
    role_set(user=UserFactory(name="Amazon / BWI"), role="operator", facility_slugs=[bwi2.slug])
    client = Client()
    page = client.get(f"/warehouses/{bwi2.slug}/").content.decode()
    assert 'href="/warehouses/operator/Amazon%20/%20BWI/"' in page
    browse = client.get("/warehouses/operator/Amazon / BWI/")
    assert browse.status_code == 200 and "BWI2 Amazon Fulfillment Center" in browse.content.decode()
    form = client.get("/warehouses/search/?country=united+states&operator=amazon+%2F+bwi").content.decode()
    assert 'name="country"' in form and 'name="operator"' in form and "1 facility." in form
