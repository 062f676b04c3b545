"""The project's resources in Chromium: an add-on provisioned from its page and listed ready with its variable,
a component added with its address; both pages pass axe and are captured in docs/screens/."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow


def test_add_a_postgres_addon_and_a_component(live_platform, new_page):
    import psycopg

    try:
        psycopg.connect(live_platform.env["ADDONS_POSTGRES_URL"], connect_timeout=3).close()
    except psycopg.Error as exc:
        if __import__("os").environ.get("REQUIRE_SANDBOX"):
            raise
        pytest.skip(f"needs PostgreSQL on 127.0.0.1:5432: {exc}")
    user = live_platform.create_user()
    page = new_page()
    live_platform.sign_in(page, user["email"], user["password"])
    page.get_by_label("Name").fill("Resources")
    page.get_by_role("button", name="Create workspace").click()
    page.get_by_role("link", name="New project").first.click()
    page.get_by_label("Project name").first.fill("Shop")
    page.get_by_label("Static site (static)").check()
    page.get_by_role("button", name="Create and deploy").first.click()

    page.get_by_role("link", name="Add-ons").click()
    expect(page.get_by_text("No add-ons yet.")).to_be_visible()
    page.get_by_label("Kind").select_option("postgres")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_role("status").first).to_contain_text("DATABASE_URL")
    for _ in range(60):  # the worker provisions it
        if page.locator(".badge-ready").count():
            break
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator(".badge-ready")).to_have_text("ready")
    expect(page.get_by_role("cell", name="DATABASE_URL")).to_be_visible()
    axe_check(page)
    screenshot(page, "project-addons")
    page.get_by_role("button", name="Delete add-on postgres").click()
    expect(page.get_by_text("No add-ons yet.")).to_be_visible()
    live_platform.script(  # drop what the add-on made on the machine's PostgreSQL now, not after the grace period
        "from django.utils import timezone\nfrom datetime import timedelta\nfrom platform_app.models import Addon\n"
        "from platform_app.services.resources.addons import addons_purge\n"
        "Addon.objects.update(deleted_at=timezone.now() - timedelta(days=2))\nprint(addons_purge())")

    page.get_by_role("link", name="Components").click()
    page.get_by_label("Name").fill("api")
    page.get_by_label("Kind").select_option("web")
    page.get_by_label("Start command").fill("python3 app.py")
    page.get_by_role("button", name="Add component").click()
    expect(page.get_by_role("heading", name="api web")).to_be_visible()
    expect(page.locator("article .badge").first).to_have_text("idle")
    axe_check(page)
    screenshot(page, "project-components")
    page.close()
