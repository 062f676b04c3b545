"""Directory pages kept whole for visitors without cookies (warehouse_app/pages/kept.py): the same page with each
visitor's own CSRF token, rendered again after the directory changes, and never kept for anyone signed in."""
import re

import pytest
from django.test import Client

from tests.factories import PASSWORD, UserFactory
from warehouse_app.models import Facility
from warehouse_app.services import directory

pytestmark = pytest.mark.django_db
TOKEN = re.compile(r'"X-CSRFToken": "([^"]+)"')


def without_token(resp) -> str:
    return TOKEN.sub("", resp.content.decode())


@pytest.mark.parametrize("path", ["/warehouses/search/?type=industrial", "/warehouses/region/maryland/",
                                  "/warehouses/"])
def test_a_visitor_gets_the_kept_page_with_a_token_of_its_own(imported, path):
    first_visitor, second_visitor = Client(), Client()
    rendered = first_visitor.get(path)
    kept = second_visitor.get(path)
    again = second_visitor.get(path)
    assert rendered.status_code == kept.status_code == again.status_code == 200
    assert rendered.templates and not kept.templates and not again.templates  # rendered once, then kept
    assert without_token(kept) == without_token(rendered)
    assert kept["Content-Type"] == rendered["Content-Type"] == "text/html; charset=utf-8"
    assert kept["Content-Security-Policy"] == rendered["Content-Security-Policy"]
    assert kept["Vary"] == rendered["Vary"]
    tokens = {TOKEN.search(r.content.decode()).group(1) for r in (rendered, kept, again)}
    assert len(tokens) == 3 and "kept-page-csrf-slot" not in tokens
    assert "csrftoken" in kept.cookies  # the cookie the token goes with


def test_the_token_of_a_kept_page_passes_the_csrf_check(imported, db):
    UserFactory(email="carla@example.com")
    Client().get("/warehouses/search/?type=industrial")  # now kept
    visitor = Client(enforce_csrf_checks=True)
    page = visitor.get("/warehouses/search/?type=industrial")
    assert not page.templates
    token = TOKEN.search(page.content.decode()).group(1)
    signed_in = visitor.post("/warehouses/account/", {"action": "sign-in", "in-email": "carla@example.com",
                                                      "in-password": PASSWORD, "csrfmiddlewaretoken": token})
    assert signed_in.status_code == 302
    refused = Client(enforce_csrf_checks=True).post("/warehouses/account/", {
        "action": "sign-in", "in-email": "carla@example.com", "in-password": PASSWORD, "csrfmiddlewaretoken": token})
    assert refused.status_code == 403  # the token belongs to the visitor's cookie


def test_signed_in_and_cookie_carrying_visitors_get_the_page_rendered(imported):
    path = "/warehouses/search/?type=industrial"
    Client().get(path)
    carla = UserFactory(email="carla@example.com")
    member = Client()
    member.force_login(carla)
    page = member.get(path)
    assert page.templates and "carla@example.com" in page.content.decode() and "My space" in page.content.decode()
    with_cookie = Client()
    with_cookie.cookies["ws-session"] = "anything"
    assert with_cookie.get(path).templates
    assert Client().get(path).templates == []  # still kept for visitors


def test_a_change_to_the_directory_renders_the_page_again(imported):
    path = "/warehouses/search/?type=industrial"
    before = Client().get(path)
    assert not Client().get(path).templates
    largest = Facility.objects.filter(type_code="industrial").order_by("-floor_area_m2").first()
    largest.status = Facility.Status.WITHDRAWN
    directory.facility_change(facility=largest, fields=["status"])
    after = Client().get(path)
    assert after.templates
    assert f'/warehouses/{largest.slug}/"' in before.content.decode()
    assert f'/warehouses/{largest.slug}/"' not in after.content.decode()


def test_a_page_past_the_end_is_not_kept(imported):
    for _ in range(2):
        resp = Client().get("/warehouses/search/?type=industrial&page=999")
        assert resp.status_code == 404 and resp.templates
