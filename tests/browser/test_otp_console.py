"""The code console in Chromium against the production server and a real worker: create a test key → send a
test code from the console → the worker puts it in the sandbox outbox → verify it through the API with the
key → the log shows it verified. Every console page passes axe and is captured in docs/screens/."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PASSWORD, axe_check, screenshot

pytestmark = pytest.mark.slow


def check(page, name):
    axe_check(page)
    screenshot(page, name)


def reload_until_visible(page, locator, tries=30):
    """The worker delivers after the redirect: reload until the row is there (bounded)."""
    for _ in range(tries):
        try:
            expect(locator).to_be_visible(timeout=1_000)
            return
        except AssertionError:
            page.reload()
    expect(locator).to_be_visible()


def test_test_key_send_outbox_verify(live_platform, new_page):
    page = new_page()  # signed out, whatever other tests did with the shared page
    live_platform.script(f"""
import json
from platform_app.models import Membership, User, Workspace
user = User.objects.create_user(email="codes@example.com", password="{PASSWORD}", name="Codes")
Membership.objects.create(workspace=Workspace.objects.create(slug="codes-team", name="Codes Team"), user=user,
                          role="owner")
print(json.dumps(user.pk))
""")
    live_platform.sign_in(page, "codes@example.com", PASSWORD)
    base = live_platform.url + "/dashboard/otp/codes-team/"

    page.goto(base)
    page.get_by_label("Name").fill("browser")
    page.get_by_label("Mode").select_option("test")
    page.get_by_role("button", name="Create key").click()
    raw = page.get_by_test_id("created-key").inner_text()
    assert re.fullmatch(r"svc_test_[\w-]+", raw)

    page.get_by_role("link", name="Test send and outbox").click()
    page.get_by_label("Recipient").fill("+14155550123")
    page.get_by_label("Channel").select_option("sms")
    page.get_by_role("button", name="Send test code").click()
    expect(page.get_by_role("status").first).to_contain_text("Test code sent to +14155550123")
    record_id = re.search(r"\((otp_\w+)\)", page.get_by_role("status").first.inner_text()).group(1)
    code = page.get_by_test_id("code").first
    reload_until_visible(page, code)
    check(page, "codes-sandbox")

    response = page.request.post(live_platform.url + "/api/v1/otp/verify",
                                 headers={"Authorization": f"Bearer {raw}"},
                                 data={"id": record_id, "code": code.inner_text()})
    assert response.status == 200 and response.json()["verified"] is True

    page.get_by_role("link", name="Verification log").click()
    page.get_by_label("Status").select_option("verified")
    page.get_by_role("button", name="Filter").click()
    record = page.locator(f"article#{record_id}")
    expect(record).to_contain_text("verified")
    expect(record.locator("table tbody")).to_contain_text("sms")
    check(page, "codes-log")

    page.get_by_role("link", name="Keys and usage").click()
    expect(page.locator("figure.chart svg rect[x]")).to_have_count(1)  # today's sms delivery
    expect(page.get_by_test_id("created-key")).to_have_count(0)  # shown once
    check(page, "codes-keys")
    page.get_by_role("link", name="Routing and channels").click()
    expect(page.get_by_role("heading", name="Routing rules")).to_be_visible()
    check(page, "codes-routing")
