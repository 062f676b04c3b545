"""The warehouse journey in Chromium against the production server, on the small OSM extract: search → facility →
request a quote while signed out → create an account, the request still filled in → send it → the operator
answers in the inbox → book → record a receipt → see it on hand. The region map and a phone-width search page
too. Every main page passes axe and is captured in docs/screens/."""
import re
from datetime import date, timedelta

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PASSWORD, axe_check, screenshot
from tests.processes import ROOT

pytestmark = pytest.mark.slow
EXTRACT = ROOT / "warehouse_app" / "data" / "osm" / "baltimore-small.osm.pbf"


def check(page, name):
    axe_check(page)
    screenshot(page, name)


@pytest.fixture(scope="module")
def directory(live_platform):
    """The imported extract and an operator answering for the one `warehouse` building."""
    live_platform.manage("import_osm", str(EXTRACT), "--region", "Maryland", "--country", "United States")
    return live_platform.script(f"""
import json
from platform_app.models import User
from warehouse_app.models import Facility
from warehouse_app.services.accounts import role_set
slug = Facility.objects.get(type_code="warehouse").slug
operator = User.objects.create_user(email="dock@example.com", password="{PASSWORD}", name="Dock Operator")
role_set(user=operator, role="operator", facility_slugs=[slug])
print(json.dumps({{"slug": slug, "operator": operator.email}}))
""")


def test_search_quote_answer_book_receive(live_platform, directory, new_page):
    page = new_page()  # signed out, whatever other tests did with the shared page
    base = live_platform.url
    page.goto(base + "/warehouses/")
    check(page, "warehouses-home")
    page.get_by_label("Name, city or operator").first.fill("BWI2")
    page.get_by_role("button", name="Search").first.click()
    expect(page.get_by_text("1 facility.")).to_be_visible()
    check(page, "warehouses-search")

    page.get_by_role("link", name="BWI2 Amazon Fulfillment Center").click()
    expect(page).to_have_url(f"{base}/warehouses/{directory['slug']}/")
    check(page, "warehouses-facility")
    start = (date.today() + timedelta(days=14)).isoformat()
    page.get_by_label("Quantity").fill("40")
    page.get_by_label("Start date").fill(start)
    page.get_by_label("Notes").fill("Palletised dry goods")
    page.get_by_role("button", name="Request a quote").click()

    expect(page).to_have_url(re.compile(r"/warehouses/account/\?next="))
    expect(page.get_by_text("Your quote request is kept")).to_be_visible()
    check(page, "warehouses-sign-in")
    page.get_by_label("Name").fill("Carla Customer")
    page.get_by_label("Email").nth(1).fill("carla@example.com")
    page.get_by_label("Password").nth(1).fill("carla-password-2026")
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(re.compile(r"/quote\?"))
    expect(page.get_by_label("Quantity")).to_have_value("40")
    expect(page.get_by_label("Notes")).to_have_value("Palletised dry goods")
    page.get_by_role("button", name="Request a quote").click()
    expect(page).to_have_url(base + "/warehouses/my/")
    reference = re.search(r"Quote (Q-\w+) requested", page.get_by_role("status").first.inner_text()).group(1)

    operator = new_page()
    operator.goto(base + "/warehouses/inbox/")
    operator.get_by_label("Email").first.fill(directory["operator"])
    operator.get_by_label("Password").first.fill(PASSWORD)
    operator.get_by_role("button", name="Sign in").click()
    expect(operator).to_have_url(base + "/warehouses/inbox/")
    request = operator.locator(f"article#{reference}")
    expect(request).to_contain_text("Palletised dry goods")
    check(operator, "warehouses-inbox")
    answer = request.get_by_role("form", name=f"Answer {reference}")
    answer.get_by_label("Price").fill("1250")
    answer.get_by_label("Valid until").fill((date.today() + timedelta(days=7)).isoformat())
    answer.get_by_role("button", name="Send price").click()
    expect(operator.get_by_role("status").first).to_contain_text(f"Quote {reference} answered")

    page.reload()
    expect(page.get_by_text("12.50 USD per pallet")).to_be_visible()
    page.get_by_role("button", name=f"Book {reference}").click()
    expect(page).to_have_url(re.compile(r"/warehouses/my/bookings/B-\w+/$"))
    page.get_by_label("Kind").select_option("receipt")
    page.get_by_label("Quantity").fill("25")
    page.get_by_label("SKU").fill("PAL-001")
    page.get_by_role("button", name="Record").click()
    expect(page.get_by_test_id("on-hand")).to_have_text("25")
    check(page, "warehouses-booking")
    page.get_by_role("link", name="My space").first.click()
    expect(page.get_by_test_id("on-hand").first).to_have_text("25 pallet")
    check(page, "warehouses-my")

    page.goto(base + "/warehouses/region/Maryland/")
    expect(page.frame_locator("figure.region-map iframe").locator("svg path")).to_have_count(78)
    check(page, "warehouses-region")
    # an outline opens its facility in the whole window, not inside the map's frame
    page.frame_locator("figure.region-map iframe").locator("svg a").first.click()
    expect(page.get_by_role("button", name="Request a quote")).to_be_visible()
    assert page.url.startswith(base + "/warehouses/") and "/region/" not in page.url

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base + "/warehouses/search/?region=Maryland")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the search page is {overflow}px wider than a phone"
    screenshot(page, "warehouses-search-phone")
