"""Web analytics in a real browser: a deployed page of a project with analytics on carries the tracker script,
Chromium runs it, and its page-view beacon (sendBeacon, text/plain, cross-origin) is stored by the platform, then
its Web Vitals when the page is hidden; the project's Analytics page shows them and a rule added on the Firewall
page refuses at the edge (both pages axe-checked, captured in docs/screens/)."""
import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow

# Headless Chromium says "HeadlessChrome", which the beacon drops as a bot: the page presents a desktop browser.
DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"

SETUP = """
import json
from django.conf import settings
from platform_app.models import Deployment, Project, Workspace
from platform_app.services.edge.analytics import analytics_set
folder = settings.ARTIFACT_ROOT / "analytics-site"
folder.mkdir(parents=True, exist_ok=True)
(folder / "index.html").write_text("<!doctype html><html lang=en><head><title>Tracked</title></head>"
                                   "<body><h1>Tracked page</h1></body></html>")
workspace = Workspace.objects.create(name="Analytics", slug="analytics-browser")
project = Project.objects.create(workspace=workspace, name="Tracked", slug="tracked")
deployment = Deployment.objects.create(project=project, env="production", branch="main", status="ready",
                                       artifact_path="analytics-site")
project.production_deployment = deployment
project.save()
analytics_set(project=project, enabled=True)
print(json.dumps({"project": project.pk, "script": settings.SITE_URL}))
"""

OWNER = """
import json
from platform_app.models import Membership, User, Workspace
Membership.objects.create(workspace=Workspace.objects.get(slug="analytics-browser"),
                          user=User.objects.get(email=%r), role="owner")
print(json.dumps(True))
"""

STORED = """
import json
from platform_app.models import AnalyticsEvent
print(json.dumps(list(AnalyticsEvent.objects.filter(project_id=%r).values_list("type", "path"))))
"""


def test_injected_script_sends_a_stored_page_view(live_platform, new_page):
    made = live_platform.script(SETUP)
    page = new_page(user_agent=DESKTOP)
    assert made["script"].rstrip("/") == live_platform.url.rstrip("/")  # the script and beacon come from the platform
    with page.expect_response(lambda r: r.url.endswith("/beacon")) as beacon:
        response = page.goto(live_platform.site_url("tracked"))
        assert response.status == 200
    assert beacon.value.status == 204
    html = page.content()
    assert f'/v1/analytics/{made["project"]}/svc.js' in html
    stored = live_platform.script(STORED % made["project"])
    assert stored == [["pageview", "/"]], json.dumps(stored)
    # hiding the page (switching tabs) sends the Web Vitals it observed: TTFB and FCP at least, headless
    with page.expect_response(lambda r: r.url.endswith("/beacon") and '"FCP"' in (r.request.post_data or "")) as vital:
        page.evaluate("Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});"
                      "document.dispatchEvent(new Event('visibilitychange'))")
    assert vital.value.status == 204

    owner = live_platform.create_user()
    live_platform.script(OWNER % owner["email"])
    dashboard = new_page()
    live_platform.sign_in(dashboard, owner["email"], owner["password"])
    dashboard.goto(live_platform.url + "/dashboard/analytics-browser/projects/tracked/analytics/?days=7")
    expect(dashboard.get_by_role("heading", name="Top paths")).to_be_visible()
    expect(dashboard.get_by_role("row", name="FCP")).not_to_contain_text("—")  # the vital sent on leaving
    expect(dashboard.get_by_role("button", name="Turn analytics off")).to_be_visible()
    expect(dashboard.locator("svg.chart rect")).to_have_count(7)
    axe_check(dashboard)
    screenshot(dashboard, "edge-analytics")
    dashboard.get_by_role("link", name="Firewall").click()
    dashboard.get_by_label("Name").fill("block admin")
    dashboard.get_by_label("Condition: field").select_option("path")
    dashboard.get_by_label("Value").fill("/admin")
    dashboard.get_by_label("Operator").select_option("prefix")
    dashboard.get_by_role("button", name="Add rule").click()
    expect(dashboard.get_by_role("cell", name="block admin", exact=True)).to_be_visible()
    axe_check(dashboard)
    screenshot(dashboard, "edge-firewall")
    assert page.goto(live_platform.site_url("tracked") + "admin/").status == 403
