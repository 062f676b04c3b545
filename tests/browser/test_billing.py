"""A workspace's Cost and Billing tabs in Chromium: metered usage shown by category with server-drawn bars and a
recommendation, then a usage cap set below the spend from the Billing tab (which says deploys stop, and that the
payments provider is not configured on this platform). Both pages pass axe and are captured in docs/screens/."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow


def test_cost_and_billing_tabs(live_platform, new_page):
    user = live_platform.create_user(name="Money")
    page = new_page()
    live_platform.sign_in(page, user["email"], user["password"])
    page.get_by_label("Name").fill("Money Team")
    page.get_by_role("button", name="Create workspace").click()
    expect(page).to_have_url(live_platform.url + "/dashboard/money-team/")
    with live_platform.orm():
        from datetime import timedelta

        from django.utils import timezone

        from platform_app.models import Component, Deployment, Project, UsageRecord, Workspace
        from platform_app.services.billing.meters import period_bounds

        workspace = Workspace.objects.get(slug="money-team")
        project = Project.objects.create(workspace=workspace, name="Shop", slug="money-shop",
                                         git_url="https://git.example.com/shop.git")
        start, _ = period_bounds(timezone.now())
        for meter, quantity in (("build_seconds", 60 * 250), ("instance_seconds:standard", 3600 * 100),
                                ("edge_bytes", 12 * 10 ** 9)):
            UsageRecord.objects.create(workspace=workspace, project=project, project_ref=project.pk,
                                       project_name="Shop", hour=start, meter=meter, quantity=quantity)
        old = timezone.now() - timedelta(days=10)
        deployment = Deployment.objects.create(project=project, env="production", branch="main", status="ready",
                                               created_at=old)
        Component.objects.create(project=project, name="api", kind="web", start_command="node app.js",
                                 instance_size="standard", deployment=deployment, created_at=old)

    page.get_by_role("link", name="Cost").click()
    expect(page.locator("#cost-total")).to_have_text("6.70 USD")  # 2.50 builds + 3.00 instances + 1.20 bandwidth
    expect(page.get_by_role("img", name="This period's cost by category")).to_be_visible()
    expect(page.get_by_text("The web component api of Shop")).to_be_visible()
    axe_check(page)
    screenshot(page, "workspace-cost")

    page.get_by_role("link", name="Billing").click()
    expect(page.get_by_text("The payments provider is not configured")).to_be_visible()
    page.get_by_label("Monthly usage cap").fill("5")
    page.get_by_role("button", name="Save cap").click()
    expect(page.get_by_role("status").first).to_contain_text("New deployments are refused")
    expect(page.locator("#cap-state")).to_contain_text("The usage cap (5.00 USD) is reached")
    axe_check(page)
    screenshot(page, "workspace-billing")
    page.close()
