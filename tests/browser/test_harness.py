"""The harness itself: the production server answers the browser, pages pass axe, static files load under CSP."""
import pytest

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow


def test_sign_in_page_loads_with_its_assets_and_passes_axe(live_platform, page):
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    response = page.goto(live_platform.url + "/dashboard/login/")
    assert response.status == 200
    page.wait_for_function("() => window.htmx !== undefined")  # the vendored script ran under the CSP
    assert errors == []
    axe_check(page)
    screenshot(page, "sign-in")


def test_users_made_through_the_orm_can_sign_in(live_platform, new_page):
    user = live_platform.create_user()
    page = new_page()
    live_platform.sign_in(page, user["email"], user["password"])
    assert page.url == live_platform.url + "/dashboard/"
    page.close()
