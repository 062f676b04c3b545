"""The organisation pages in Chromium against the production server: an owner saves single sign-on settings and
makes a SCIM token (shown once), allows their own network on the Security tab, sends feedback from the header link,
and staff triage it in the inbox. Every page passes axe and is captured in docs/screens/."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow

SETUP = """
import json
from platform_app.models import User
from platform_app.services.teams.workspaces import workspace_create
owner = User.objects.get(email=%r)
User.objects.filter(pk=owner.pk).update(is_staff=True)
workspace_create(user=owner, name="Org Browser", slug="org-browser")
print(json.dumps(True))
"""


def check(page, name):
    axe_check(page)
    screenshot(page, name)


def test_sso_security_and_feedback_pages(live_platform, page):
    owner = live_platform.create_user(name="Owner")
    live_platform.script(SETUP % owner["email"])
    live_platform.sign_in(page, owner["email"], owner["password"])
    base = live_platform.url

    page.goto(base + "/dashboard/org-browser/")
    page.get_by_role("link", name="Single sign-on").click()
    expect(page).to_have_url(base + "/dashboard/org-browser/sso/")
    expect(page.get_by_role("heading", name="OpenID Connect provider")).to_be_visible()
    page.get_by_label("Allowed email domains").fill("example.com")
    page.get_by_label("Default role").select_option("developer")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Single sign-on settings saved.")).to_be_visible()
    page.get_by_role("button", name="Create a SCIM token").click()
    expect(page.locator("#scim-token")).to_have_text(re.compile(r"^scim_\S{40,}$"))
    check(page, "workspace-sso")

    page.get_by_role("link", name="Security").click()
    own = page.locator("#your-ip").inner_text()
    page.get_by_label("Network", exact=True).fill(own)
    page.get_by_label("Note", exact=True).fill("my desk")
    page.get_by_role("button", name="Add to the allowlist").click()
    expect(page.get_by_role("cell", name=f"{own}/32", exact=True)).to_be_visible()
    check(page, "workspace-security")

    page.get_by_role("link", name="Feedback").click()
    expect(page).to_have_url(re.compile(r"/feedback/\?page=/dashboard/org-browser/security/$"))
    page.get_by_label("Category").select_option("bug")
    page.get_by_label("Message").fill("The switcher hides behind the tabs on a phone.")
    check(page, "feedback")
    page.get_by_role("button", name="Send feedback").click()
    expect(page).to_have_url(base + "/dashboard/org-browser/security/")
    expect(page.get_by_text("Thank you: your feedback was sent.")).to_be_visible()

    page.goto(base + "/feedback/inbox/")
    expect(page.get_by_text("The switcher hides behind the tabs on a phone.")).to_be_visible()
    check(page, "feedback-inbox")
    page.get_by_label("Status").nth(1).select_option("triaged")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("article .badge")).to_have_text("triaged")
