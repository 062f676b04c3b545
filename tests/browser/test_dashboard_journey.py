"""The dashboard's core path in Chromium against the production server and a real worker: sign up → new
workspace → new project from the static template → the build log streams to `ready` → the site answers at its
address → add an environment variable → redeploy → roll back. Every main page passes axe and is captured in
docs/screens/."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow

BUILD_TIMEOUT = 90_000  # ms: a static build on a busy 2-core machine


def check(page, name):
    axe_check(page)
    screenshot(page, name)


def wait_ready(page):
    expect(page.locator("#deployment-status")).to_have_text("ready", timeout=BUILD_TIMEOUT)
    expect(page.locator("#build-log")).to_contain_text("Deployment ready.")


def test_sign_up_to_rollback(live_platform, page):
    base = live_platform.url
    page.goto(base + "/dashboard/signup/")
    check(page, "sign-up")
    page.get_by_label("Name").fill("Journey")
    page.get_by_label("Email").fill("journey@example.com")
    page.get_by_label("Password").fill("journey-password-2026")
    page.get_by_role("button", name="Sign up").click()
    expect(page).to_have_url(base + "/dashboard/")
    check(page, "dashboard")

    page.get_by_label("Name").fill("Journey Team")
    page.get_by_role("button", name="Create workspace").click()
    expect(page).to_have_url(base + "/dashboard/journey-team/")
    expect(page.get_by_text("No projects yet.")).to_be_visible()
    page.get_by_role("link", name="New project").first.click()
    expect(page.get_by_label("Static site (static)")).to_be_visible()
    check(page, "new-project")

    page.get_by_label("Project name").first.fill("Hello")
    page.get_by_label("Static site (static)").check()
    page.get_by_role("button", name="Create and deploy").first.click()
    expect(page).to_have_url(re.compile(r"/dashboard/journey-team/deployments/dpl_\w+/$"))
    first_url = page.url
    wait_ready(page)  # the status changed in the page, from the live log stream's `end`
    expect(page.locator("#deployment-address")).to_be_visible()
    check(page, "deployment")

    site = page.context.new_page()
    response = site.goto(live_platform.site_url("hello"))
    assert response.status == 200
    expect(site.get_by_role("heading", name="It works")).to_be_visible()
    site.close()

    page.get_by_role("link", name="Environment").click()
    page.get_by_label("Key").fill("GREETING")
    page.get_by_label("Value").fill("hello from the dashboard")
    page.get_by_role("button", name="Add variable").click()
    expect(page.locator("table").first).to_contain_text("GREETING")
    expect(page.get_by_text("hello from the dashboard")).to_have_count(0)  # secret: masked
    check(page, "environment")

    page.get_by_role("link", name="Deployments").click()
    expect(page.get_by_text("needs redeploy")).to_be_visible()
    check(page, "project")
    # ages are the UTC moment in the HTML, shown as such by static/js/relative-time.js
    age = page.locator("time[data-ago]").first
    expect(age).to_have_text(re.compile(r"^(just now|1 minute ago|\d+ minutes ago)$"))
    expect(age).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$"))
    page.get_by_role("button", name="Redeploy").first.click()
    expect(page).not_to_have_url(first_url)
    wait_ready(page)

    page.get_by_role("link", name="Deployments").click()
    page.get_by_role("button", name="Roll back to this").click()
    first_id = first_url.rstrip("/").rsplit("/", 1)[-1]
    expect(page.get_by_role("status").first).to_contain_text(f"Production now serves {first_id}")
    row = page.locator("tr", has=page.locator(f'a[href$="/deployments/{first_id}/"]'))
    expect(row.get_by_text("current")).to_be_visible()
    site = page.context.new_page()
    assert site.goto(live_platform.site_url("hello")).status == 200  # production still answers, now the first build
    site.close()

    for path, name in (("/dashboard/account/", "account"), ("/dashboard/account/mfa/", "mfa-enrol"),
                       ("/dashboard/journey-team/agents/", "agents"), ("/dashboard/journey-team/", "workspace"),
                       ("/dashboard/journey-team/settings/", "workspace-settings"),
                       ("/dashboard/journey-team/tokens/", "tokens"), ("/dashboard/journey-team/audit/", "audit"),
                       ("/dashboard/journey-team/projects/hello/settings/", "project-settings")):
        page.goto(base + path)
        check(page, name)
        if name == "workspace":
            expect(page.locator("time[data-ago]").first).to_have_text(re.compile(r" ago$|^just now$"))

    # a phone: the page never scrolls sideways (tables scroll inside their wrapper)
    page.set_viewport_size({"width": 360, "height": 740})
    for path, name in (("/dashboard/journey-team/projects/hello/", "project-phone"),
                       ("/dashboard/journey-team/projects/hello/env/", "environment-phone")):
        page.goto(base + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        check(page, name)
    page.set_viewport_size({"width": 1280, "height": 800})

    # dark mode (prefers-color-scheme) keeps its contrast
    page.emulate_media(color_scheme="dark")
    page.goto(first_url)
    check(page, "deployment-dark")
    page.emulate_media(color_scheme="light")


def test_live_log_resumes_after_the_server_restarts(live_platform, new_page):
    """The build log keeps streaming across a web-server restart: the browser reconnects with Last-Event-ID and
    the page ends with every line exactly once."""
    user = live_platform.create_user()
    page = new_page()
    live_platform.sign_in(page, user["email"], user["password"])
    page.get_by_label("Name").fill("Restart")
    page.get_by_role("button", name="Create workspace").click()
    page.get_by_role("link", name="New project").first.click()
    page.get_by_label("Project name").first.fill("Slow")
    page.get_by_label("Static site (static)").check()
    page.get_by_role("button", name="Create and deploy").first.click()
    wait_ready(page)
    page.get_by_role("link", name="Settings").last.click()
    page.get_by_label("Build command").fill("for i in 1 2 3 4 5 6 7 8; do echo step-$i; sleep 1; done")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_role("link", name="Deployments").click()
    page.get_by_role("button", name="Deploy", exact=True).click()
    expect(page.locator("#build-log")).to_contain_text("step-2", timeout=BUILD_TIMEOUT)
    live_platform.restart_web()
    wait_ready(page)
    lines = page.locator("#build-log .log-line").all_inner_texts()
    for i in range(1, 9):
        assert lines.count(f"step-{i}") == 1, lines
    page.close()
