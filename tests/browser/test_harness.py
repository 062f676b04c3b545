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
