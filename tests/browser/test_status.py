"""The status page and the staff incident pages in Chromium against the production server: a staff user opens an
incident on /staff/incidents/, posts an update, and a signed-out visitor reaches /status from the site navigation
and reads it there with its 90 daily bars, the probes' samples written by the beat task of the platform's own
process. Both pages pass axe and are captured in docs/screens/."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PASSWORD, axe_check, screenshot

pytestmark = pytest.mark.slow

STAFF = """
import json
from platform_app.models import ProbeSample, User
from platform_app.services.staff.probes import status_probes_run
User.objects.create_user(email="status-staff@example.com", password=%r, name="Staff", is_staff=True)
status_probes_run()
print(json.dumps(ProbeSample.objects.get(probe="api").detail))
"""


def test_staff_open_an_incident_and_the_status_page_shows_it(live_platform, new_page):
    api_detail = live_platform.script(STAFF % PASSWORD)
    # the probes ran against this very server's application: /health answered 200 (within its threshold or not:
    # a process's first request on a busy machine may take longer, and no test asserts a timing)
    assert api_detail == "" or api_detail.startswith("GET /health took"), api_detail
    page = new_page()
    live_platform.sign_in(page, "status-staff@example.com", PASSWORD)

    page.goto(live_platform.url + "/staff/incidents/")
    page.get_by_label("Title").fill("Slow builds")
    page.get_by_label("Impact").select_option("major")
    page.get_by_label("Message").fill("Builds wait longer than usual.")
    page.get_by_label("Builds").check()
    page.get_by_role("button", name="Open incident").click()
    expect(page.get_by_role("heading", name="Slow builds")).to_be_visible()
    page.get_by_label("Status").select_option("identified")
    page.get_by_label("Message").fill("A builder is down.")
    page.get_by_role("button", name="Post update").click()
    expect(page.get_by_test_id("incident-status")).to_have_text("identified")
    axe_check(page)
    screenshot(page, "staff-incident")

    visitor = new_page()
    visitor.goto(live_platform.url + "/")
    visitor.get_by_role("navigation", name="Site").get_by_role("link", name="Status").click()
    expect(visitor.get_by_role("heading", name="Slow builds")).to_be_visible()
    expect(visitor.get_by_text("A builder is down.")).to_be_visible()
    # the major incident degrades Builds; the overall state is the worst component's (a probe of another one may
    # have found this busy machine slow), so it is at least degraded
    expect(visitor.get_by_role("article", name="Builds", exact=True).locator(".badge")).to_have_text("degraded")
    expect(visitor.get_by_test_id("overall")).not_to_have_text("All systems operational")
    expect(visitor.get_by_role("list", name="Builds, the last 90 days").locator("li")).to_have_count(90)
    axe_check(visitor)
    screenshot(visitor, "status")
