"""Warehouse pages: the directory without JavaScript, and the account pages through the API's services and rules
(quotes, shortlist, bookings, stock, the operator's inbox)."""
import gzip
from datetime import date, timedelta
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.factories import PASSWORD, UserFactory
from tests.warehouse_app.factories import (BookingFactory, FacilityFactory, MovementFactory, OperatorFacilityFactory,
                                           QuoteFactory, ShortlistEntryFactory, WarehouseProfileFactory)
from warehouse_app.models import Booking, Facility, Movement, Quote, ShortlistEntry
from warehouse_app.services import directory
from warehouse_app.services.naming import facility_display_name

pytestmark = pytest.mark.django_db
SOON = (date.today() + timedelta(days=10)).isoformat()


def browser(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def facility(db):
    return FacilityFactory(slug="depot-glen", name="", type_code="warehouse", floor_area_m2=12_389.0,
                           city="Glen Burnie")


@pytest.fixture
def carla(db):
    return UserFactory(email="carla@example.com", name="Carla")


@pytest.fixture
def olga(facility):
    """An operator answering for `facility`."""
    user = UserFactory(email="olga@example.com", name="Olga")
    WarehouseProfileFactory(user=user, role="operator")
    OperatorFacilityFactory(user=user, facility=facility)
    return user


def quote_fields(**over):
    return {"quantity": "40", "unit": "pallet", "start_date": SOON, "term_months": "6", "notes": "dry goods", **over}


# Directory -------------------------------------------------------------------------------

def test_home_search_and_facility_pages(imported):
    client = Client()
    home = client.get("/warehouses/").content.decode()
    assert "Maryland" in home and "OpenStreetMap contributors" in home
    search = client.get("/warehouses/search/?type=warehouse&colour=red").content.decode()
    assert "BWI2 Amazon Fulfillment Center" in search and "colour" in search and "unknown filter" in search
    assert "1 facility." in search
    assert '<div class="table-wrap"><table class="table table-cards">' in search  # scrolls, never overflows a phone
    city = client.get("/warehouses/city/Baltimore/")
    assert city.status_code == 200 and "7 facilities" in city.content.decode()
    bwi2 = Facility.objects.get(type_code="warehouse")
    page = client.get(f"/warehouses/{bwi2.slug}/").content.decode()
    assert "<svg" in page and 'd="M' in page
    assert f"https://www.openstreetmap.org/way/{bwi2.osm_id}" in page
    assert "ODbL" in page and "Request a quote" in page
    assert client.get("/warehouses/nothing-here/").status_code == 404


def test_region_page_frames_a_map_that_draws_every_outline_of_the_region(imported):
    region = Facility.objects.filter(status="active", region="Maryland")
    client = Client()
    resp = client.get("/warehouses/region/Maryland/map.svg")
    assert resp.status_code == 200 and resp["Content-Type"] == "image/svg+xml"
    svg = ElementTree.fromstring(resp.content)  # a well-formed document of its own
    shapes = resp.context["map"]["shapes"]
    assert len(shapes) == region.count() > 1
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}path")) == region.count()
    # each outline links to its facility, opened in the whole window rather than the frame
    link = svg.find(".//{http://www.w3.org/2000/svg}a")
    assert link.get("target") == "_top" and link.get("href").startswith("/warehouses/")
    width, height = resp.context["map"]["width"], resp.context["map"]["height"]
    page = client.get("/warehouses/region/Maryland/").content.decode()
    assert '<iframe src="/warehouses/region/Maryland/map.svg"' in page and "<svg" not in page
    assert f"{region.count()} outlines; select one to open it" in page
    assert f"aspect-ratio: {width} / {height}" in page
    for shape in shapes:  # every projected point inside the viewBox
        for pair in shape.d.replace("M", " ").replace("L", " ").replace("Z", " ").split():
            x, y = map(float, pair.split(","))
            assert 0 <= x <= width and 0 <= y <= height
    # north is up: the northernmost building is drawn highest
    north = max(shapes, key=lambda s: s.facility.lat)
    south = min(shapes, key=lambda s: s.facility.lat)
    top = lambda s: min(float(p.split(",")[1]) for p in s.d.replace("M", " ").replace("L", " ").replace("Z", " ").split())
    assert top(north) < top(south)


def test_the_region_map_is_cached_by_browsers_gzipped_and_framed_only_by_this_site(imported):
    client = Client()
    plain = client.get("/warehouses/region/Maryland/map.svg")
    assert plain["Cache-Control"] == "public, max-age=300" and plain["Vary"] == "Accept-Encoding"
    assert plain["X-Frame-Options"] == "SAMEORIGIN" and "frame-ancestors 'self'" in plain["Content-Security-Policy"]
    assert "Content-Encoding" not in plain and plain["ETag"].startswith('W/"')
    packed = client.get("/warehouses/region/Maryland/map.svg", HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed["Content-Encoding"] == "gzip" and gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content) / 3 and packed["ETag"] == plain["ETag"]
    # a browser holding the current map revalidates it for nothing
    again = client.get("/warehouses/region/Maryland/map.svg", HTTP_IF_NONE_MATCH=plain["ETag"])
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == plain["ETag"]
    assert again["Cache-Control"] == "public, max-age=300"
    stale = client.get("/warehouses/region/Maryland/map.svg", HTTP_IF_NONE_MATCH='W/"an-older-map"')
    assert stale.status_code == 200 and stale.content == plain.content
    # the page itself still forbids framing; a region without outlines has no map
    assert client.get("/warehouses/region/Maryland/")["X-Frame-Options"] == "DENY"
    assert client.get("/warehouses/region/Nowhere/map.svg").status_code == 404
    assert "No outline to draw." in client.get("/warehouses/region/Nowhere/").content.decode()


def test_the_job_after_an_import_draws_the_maps_and_a_fresh_web_process_only_reads_them(
        db, django_capture_on_commit_callbacks):
    from config.local_cache import local_caches_clear
    from tests.warehouse_app.conftest import SMALL
    from warehouse_app.services.osm_import import osm_import

    with django_capture_on_commit_callbacks(execute=True):  # the import commits: its job runs (eager here)
        osm_import(path=SMALL, region="Maryland", country="United States", progress=lambda *_: None)
    local_caches_clear()  # a web process that has drawn nothing
    with CaptureQueriesContext(connection) as queries:
        resp = Client().get("/warehouses/region/maryland/map.svg")
    assert resp.status_code == 200 and "Outlines of 78 facilities in Maryland, north up" in resp.content.decode()
    assert not [q["sql"] for q in queries.captured_queries if '"outline"' in q["sql"]]  # no outline read here
    # a claim changes no map: the shared maps stay current
    with django_capture_on_commit_callbacks(execute=True):
        directory.facets_refresh(kinds=("operator",))
    local_caches_clear()
    with CaptureQueriesContext(connection) as queries:
        assert Client().get("/warehouses/region/Maryland/map.svg").content == resp.content
    assert not [q["sql"] for q in queries.captured_queries if '"outline"' in q["sql"]]


def test_without_the_cache_a_region_page_draws_its_map_itself(imported, redis_down):
    from config.local_cache import local_caches_clear

    local_caches_clear()
    client = Client()
    page = client.get("/warehouses/region/Maryland/")
    assert page.status_code == 200 and "78 outlines; select one to open it" in page.content.decode()
    svg = client.get("/warehouses/region/Maryland/map.svg")
    assert svg.status_code == 200 and svg.content.decode().count('<path d="M') == 78


def test_a_region_map_is_drawn_once_per_process_until_the_directory_changes(imported,
                                                                          django_assert_max_num_queries):
    client = Client()
    client.get("/warehouses/region/Maryland/")
    first = client.get("/warehouses/region/Maryland/map.svg").content.decode()
    with django_assert_max_num_queries(0):  # map, page and facets all kept
        client.get("/warehouses/region/Maryland/")
        again = client.get("/warehouses/region/Maryland/map.svg").content.decode()
    assert again == first and first.count('<path d="M') > 1
    # a staff change dates the facility and refreshes the directory: the map is drawn again, without it
    bwi2 = Facility.objects.get(type_code="warehouse")
    bwi2.status = Facility.Status.WITHDRAWN
    directory.facility_change(facility=bwi2, fields=["status"])
    after = client.get("/warehouses/region/Maryland/map.svg").content.decode()
    assert after.count('<path d="M') == first.count('<path d="M') - 1
    assert f'href="/warehouses/{bwi2.slug}/"' in first and f'href="/warehouses/{bwi2.slug}/"' not in after


def test_unnamed_facility_gets_a_readable_name_on_pages_and_as_display_name_in_the_api(facility, api):
    assert facility_display_name(facility) == "Warehouse, 12,400 m², Glen Burnie"
    page = Client().get("/warehouses/depot-glen/").content.decode()
    assert "<h1>Warehouse, 12,400 m², Glen Burnie</h1>" in page
    body = api.get("/api/warehouses/depot-glen").json()
    assert body["name"] == "" and body["display_name"] == "Warehouse, 12,400 m², Glen Burnie"
    named = FacilityFactory(name="Harbor Cold Store", floor_area_m2=640.0)
    assert facility_display_name(named) == "Harbor Cold Store"
    assert facility_display_name(FacilityFactory(name="", type_code="distribution_center", floor_area_m2=644,
                                                 city="")) == "Distribution center, 640 m², Oberland"


# Requesting a quote across sign-in -------------------------------------------------------

def test_anonymous_quote_request_survives_sign_in_and_is_sent_after(facility, carla):
    client = browser()
    resp = client.post("/warehouses/depot-glen/quote", quote_fields())
    assert resp.status_code == 302 and Quote.objects.count() == 0
    target = urlsplit(resp["Location"])
    assert target.path == "/warehouses/account/"
    next_url = parse_qs(target.query)["next"][0]
    assert next_url.startswith("/warehouses/depot-glen/quote?")
    sign_in_page = client.get(resp["Location"]).content.decode()
    assert "Your quote request is kept" in sign_in_page

    resp = client.post("/warehouses/account/", {"action": "sign-in", "next": next_url, "in-email": carla.email,
                                                "in-password": PASSWORD})
    assert resp.status_code == 302 and resp["Location"] == next_url
    filled = client.get(next_url)
    assert filled.status_code == 200
    form = filled.context["quote_form"]
    assert form.initial["quantity"] == "40" and form.initial["notes"] == "dry goods"
    assert 'value="40"' in filled.content.decode()

    resp = client.post("/warehouses/depot-glen/quote", quote_fields())
    assert resp.status_code == 302 and resp["Location"] == "/warehouses/my/"
    quote = Quote.objects.get()
    assert (quote.customer, quote.facility, quote.quantity, quote.term_months, quote.notes, quote.status) == (
        carla, facility, 40, 6, "dry goods", "pending")
    assert quote.reference in client.get("/warehouses/my/").content.decode()


def test_sign_up_keeps_the_pending_request_too(facility):
    client = browser()
    next_url = "/warehouses/depot-glen/quote?quantity=7&unit=m2&start_date=" + SOON
    resp = client.post("/warehouses/account/", {"action": "sign-up", "next": next_url, "up-name": "Nia",
                                                "up-email": "nia@example.com", "up-password": "pallets-and-forklifts"})
    assert resp.status_code == 302 and resp["Location"] == next_url
    page = client.get(next_url).content.decode()
    assert 'value="7"' in page and "nia@example.com" in page


@pytest.mark.parametrize("data, message", [
    ({"action": "sign-in", "in-email": "carla@example.com", "in-password": "wrong-password"}, "incorrect"),
    ({"action": "sign-in", "in-email": "not-an-email", "in-password": "x"}, "valid email"),
    ({"action": "sign-up", "up-email": "new@example.com", "up-password": "123"}, "too short"),
    ({"action": "sign-up", "up-email": "carla@example.com", "up-password": "pallets-and-forklifts"}, "already exists"),
])
def test_sign_in_and_sign_up_errors_are_shown_and_nobody_is_signed_in(carla, data, message):
    client = browser()
    resp = client.post("/warehouses/account/", data)
    assert resp.status_code in (400, 401, 409)
    assert message in resp.content.decode()
    assert "_auth_user_id" not in client.session
    assert not UserFactory._meta.model.objects.filter(email="new@example.com").exists()


def test_a_signed_in_visitor_goes_straight_on(carla):
    resp = browser(carla).get("/warehouses/account/?next=/warehouses/depot-glen/quote%3Fquantity%3D3")
    assert resp.status_code == 302 and resp["Location"] == "/warehouses/depot-glen/quote?quantity=3"


def test_next_never_leaves_the_site(carla):
    resp = browser().post("/warehouses/account/", {"action": "sign-in", "next": "//evil.example/x",
                                                   "in-email": carla.email, "in-password": PASSWORD})
    assert resp.status_code == 302 and resp["Location"] == "/warehouses/my/"


@pytest.mark.parametrize("over, message", [
    ({"quantity": "0"}, "greater than or equal to 1"),
    ({"term_months": "121"}, "less than or equal to 120"),
    ({"unit": "crate"}, "Select a valid choice"),
    ({"start_date": "soon"}, "Enter a valid date"),
    ({"start_date": (date.today() - timedelta(days=1)).isoformat()}, "must not be in the past"),
])
def test_bad_quote_requests_are_400_and_create_nothing(facility, carla, over, message):
    resp = browser(carla).post("/warehouses/depot-glen/quote", quote_fields(**over))
    assert resp.status_code == 400
    assert message in resp.content.decode()
    assert Quote.objects.count() == 0


def test_a_withdrawn_facility_takes_no_request(carla):
    FacilityFactory(slug="gone", status="withdrawn")
    resp = browser(carla).post("/warehouses/gone/quote", quote_fields())
    assert resp.status_code == 409 and "no longer listed" in resp.content.decode()
    assert Quote.objects.count() == 0
    assert browser().post("/warehouses/nowhere/quote", quote_fields()).status_code == 404


# Shortlist -------------------------------------------------------------------------------

def test_shortlist_save_and_remove(facility, carla):
    client = browser(carla)
    assert client.post("/warehouses/depot-glen/shortlist").status_code == 302
    assert client.post("/warehouses/depot-glen/shortlist").status_code == 302  # twice: one entry
    assert ShortlistEntry.objects.filter(user=carla).count() == 1
    assert "On your shortlist" in client.get("/warehouses/depot-glen/").content.decode()
    assert "Warehouse, 12,400 m², Glen Burnie" in client.get("/warehouses/my/").content.decode()
    client.post("/warehouses/depot-glen/shortlist", {"remove": "1"})
    assert ShortlistEntry.objects.count() == 0
    assert client.post("/warehouses/depot-glen/shortlist", {"remove": "1"}).status_code == 404


def test_anonymous_shortlist_goes_to_sign_in_and_saves_nothing(facility):
    resp = browser().post("/warehouses/depot-glen/shortlist")
    assert resp.status_code == 302 and resp["Location"].startswith("/warehouses/account/?next=")
    assert ShortlistEntry.objects.count() == 0
    assert browser().get("/warehouses/depot-glen/shortlist").status_code == 405


# The customer's space --------------------------------------------------------------------

def test_my_space_needs_sign_in(db):
    for path in ("/warehouses/my/", "/warehouses/inbox/", "/warehouses/my/bookings/B-X/"):
        resp = browser().get(path)
        assert resp.status_code == 302 and resp["Location"] == "/warehouses/account/?next=" + path.replace("/", "%2F")


def test_my_space_shows_only_my_quotes_bookings_stock_and_capacity(carla, facility):
    mine = BookingFactory(quote__customer=carla, quote__facility=facility, quote__quantity=50)
    MovementFactory(booking=mine, kind="receipt", quantity=30)
    MovementFactory(booking=mine, kind="despatch", quantity=12)
    other = BookingFactory()
    ShortlistEntryFactory(user=carla, facility=facility)
    page = browser(carla).get("/warehouses/my/").content.decode()
    assert mine.reference in page and mine.quote.reference in page and other.reference not in page
    assert '<td data-testid="on-hand">18 pallet</td>' in page
    assert f"{mine.start_date:%Y-%m}" in page and "50 pallet" in page


def test_booking_an_answered_quote(carla, facility):
    quote = QuoteFactory(customer=carla, facility=facility, status="answered", price=1250, currency="USD",
                         price_unit="pallet", valid_until=date.today() + timedelta(days=5))
    client = browser(carla)
    assert "12.50 USD" in client.get("/warehouses/my/").content.decode()
    resp = client.post(f"/warehouses/my/quotes/{quote.reference}/book")
    booking = Booking.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/warehouses/my/bookings/{booking.reference}/"
    assert (booking.customer, booking.price, booking.quantity) == (carla, 1250, quote.quantity)
    quote.refresh_from_db()
    assert quote.status == "booked"
    assert client.post(f"/warehouses/my/quotes/{quote.reference}/book").status_code == 409
    assert Booking.objects.count() == 1


def test_booking_refused_for_pending_and_for_others_quotes(carla, facility):
    pending = QuoteFactory(customer=carla, facility=facility)
    foreign = QuoteFactory(status="answered", price=100, currency="USD", valid_until=date.today())
    client = browser(carla)
    resp = client.post(f"/warehouses/my/quotes/{pending.reference}/book")
    assert resp.status_code == 409 and "this one is pending" in resp.content.decode()
    assert client.post(f"/warehouses/my/quotes/{foreign.reference}/book").status_code == 404
    assert Booking.objects.count() == 0


def test_receipt_then_despatch_on_a_booking(carla, facility):
    booking = BookingFactory(quote__customer=carla, quote__facility=facility, quote__quantity=20)
    client = browser(carla)
    url = f"/warehouses/my/bookings/{booking.reference}/"
    resp = client.post(url + "movements", {"kind": "receipt", "quantity": "15", "sku": "SKU-1", "note": "first"})
    assert resp.status_code == 302 and resp["Location"] == url
    booking.refresh_from_db()
    assert booking.status == "active"
    assert '<strong data-testid="on-hand">15</strong>' in client.get(url).content.decode()
    client.post(url + "movements", {"kind": "despatch", "quantity": "5"})
    assert '<strong data-testid="on-hand">10</strong>' in client.get(url).content.decode()


@pytest.mark.parametrize("data, status, message", [
    ({"kind": "despatch", "quantity": "11"}, 409, "only 10 on hand"),
    ({"kind": "receipt", "quantity": "11"}, 409, "would exceed the 20 pallets booked"),
    ({"kind": "receipt", "quantity": "0"}, 400, "greater than or equal to 1"),
    ({"kind": "transfer", "quantity": "1"}, 400, "Select a valid choice"),
])
def test_refused_movements_change_nothing(carla, facility, data, status, message):
    booking = BookingFactory(quote__customer=carla, quote__facility=facility, quote__quantity=20)
    MovementFactory(booking=booking, kind="receipt", quantity=10)
    resp = browser(carla).post(f"/warehouses/my/bookings/{booking.reference}/movements", data)
    assert resp.status_code == status and message in resp.content.decode()
    assert Movement.objects.count() == 1


def test_another_customers_booking_is_404(carla):
    booking = BookingFactory()
    client = browser(carla)
    assert client.get(f"/warehouses/my/bookings/{booking.reference}/").status_code == 404
    resp = client.post(f"/warehouses/my/bookings/{booking.reference}/movements", {"kind": "receipt", "quantity": "1"})
    assert resp.status_code == 404 and Movement.objects.count() == 0


# The operator's inbox --------------------------------------------------------------------

def test_a_customer_gets_403_from_the_inbox_and_no_link_to_it(carla):
    client = browser(carla)
    assert client.get("/warehouses/inbox/").status_code == 403
    assert "Operator inbox" not in client.get("/warehouses/my/").content.decode()
    quote = QuoteFactory()
    resp = client.post(f"/warehouses/inbox/{quote.reference}/decline", {f"{quote.reference}-reason": "no"})
    assert resp.status_code == 403
    quote.refresh_from_db()
    assert quote.status == "pending"


def test_operator_answers_a_request_to_its_facility(olga, facility, carla):
    quote = QuoteFactory(customer=carla, facility=facility, notes="fragile")
    elsewhere = QuoteFactory()
    client = browser(olga)
    assert "Operator inbox" in client.get("/warehouses/my/").content.decode()
    page = client.get("/warehouses/inbox/").content.decode()
    assert quote.reference in page and "fragile" in page and elsewhere.reference not in page
    p = quote.reference
    resp = client.post(f"/warehouses/inbox/{p}/answer", {f"{p}-price": "1250", f"{p}-currency": "usd",
                                                         f"{p}-unit": "pallet", f"{p}-valid_until": SOON})
    assert resp.status_code == 302 and resp["Location"] == "/warehouses/inbox/"
    quote.refresh_from_db()
    assert (quote.status, quote.price, quote.currency, quote.answered_by) == ("answered", 1250, "USD", olga)
    assert "12.50 USD" in client.get("/warehouses/inbox/").content.decode()
    again = client.post(f"/warehouses/inbox/{p}/decline", {f"{p}-reason": "full"})
    assert again.status_code == 409 and "answered quote cannot be declined" in again.content.decode()


@pytest.mark.parametrize("over, message", [
    ({"currency": "US"}, "three-letter currency"),
    ({"price": "0"}, "greater than or equal to 1"),
    ({"valid_until": "2020-01-01"}, "must not be in the past"),
])
def test_bad_answers_are_400_shown_on_the_quote_and_change_nothing(olga, facility, over, message):
    quote = QuoteFactory(facility=facility)
    p = quote.reference
    data = {"price": "1250", "currency": "USD", "unit": "pallet", "valid_until": SOON, **over}
    resp = browser(olga).post(f"/warehouses/inbox/{p}/answer", {f"{p}-{k}": v for k, v in data.items()})
    assert resp.status_code == 400 and message in resp.content.decode()
    quote.refresh_from_db()
    assert (quote.status, quote.price) == ("pending", None)


def test_operator_declines_with_a_reason_and_not_without(olga, facility):
    quote = QuoteFactory(facility=facility)
    client = browser(olga)
    p = quote.reference
    resp = client.post(f"/warehouses/inbox/{p}/decline", {f"{p}-reason": ""})
    assert resp.status_code == 400 and "This field is required" in resp.content.decode()
    quote.refresh_from_db()
    assert quote.status == "pending"
    client.post(f"/warehouses/inbox/{p}/decline", {f"{p}-reason": "Full until spring"})
    quote.refresh_from_db()
    assert (quote.status, quote.decline_reason) == ("declined", "Full until spring")


def test_operator_cannot_answer_another_facilitys_request(olga):
    quote = QuoteFactory()
    p = quote.reference
    resp = browser(olga).post(f"/warehouses/inbox/{p}/answer", {f"{p}-price": "1", f"{p}-currency": "USD",
                                                                f"{p}-unit": "pallet", f"{p}-valid_until": SOON})
    assert resp.status_code == 404
    quote.refresh_from_db()
    assert quote.status == "pending"


def test_cancelling_a_booking_needs_a_reason_and_stops_movements(carla, facility):
    booking = BookingFactory(quote__customer=carla, quote__facility=facility)
    client = browser(carla)
    url = f"/warehouses/my/bookings/{booking.reference}/"
    resp = client.post(url + "cancel", {"cancel-reason": ""})
    assert resp.status_code == 400 and "This field is required" in resp.content.decode()
    booking.refresh_from_db()
    assert booking.status == "confirmed"
    assert client.post(url + "cancel", {"cancel-reason": "Plans changed"}).status_code == 302
    booking.refresh_from_db()
    assert (booking.status, booking.cancel_reason) == ("cancelled", "Plans changed")
    page = client.get(url).content.decode()
    assert "Plans changed" in page and "Record a receipt" not in page and "Cancel booking" not in page
    again = client.post(url + "cancel", {"cancel-reason": "twice"})
    assert again.status_code == 409 and "cancelled booking cannot be cancelled" in again.content.decode()
    resp = client.post(url + "movements", {"kind": "receipt", "quantity": "1"})
    assert resp.status_code == 409 and "No movements on a cancelled booking" in resp.content.decode()
    assert Movement.objects.count() == 0
    assert browser(UserFactory()).post(url + "cancel", {"cancel-reason": "x"}).status_code == 404
