"""Staff reports of billing: revenue by month and every workspace's invoices, for `is_staff` users only."""
from datetime import UTC, datetime

import pytest

from tests.factories import SuperuserFactory, WorkspaceFactory
from tests.platform_app.billing.factories import InvoiceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(as_user):
    return as_user(SuperuserFactory(email="staff@example.com"))


def test_revenue_by_month(as_user, workspace, time_machine):
    time_machine.move_to(datetime(2027, 3, 10, tzinfo=UTC), tick=False)
    staff = as_user(SuperuserFactory(email="staff@example.com"))  # a token made at the moved clock
    other = WorkspaceFactory()
    february = datetime(2027, 2, 1, tzinfo=UTC)
    InvoiceFactory(workspace=workspace, period_start=february, total=1000, status="paid")
    InvoiceFactory(workspace=other, period_start=february, total=500, status="open")
    InvoiceFactory(workspace=other, period_start=february, total=700, status="void", kind="subscription")
    InvoiceFactory(workspace=other, period_start=datetime(2026, 1, 1, tzinfo=UTC), total=900, status="paid")
    body = staff.get("/v1/admin/billing/revenue-by-month?months=3").json()
    assert body == {"currency": "usd", "months": [
        {"month": "2027-03", "invoiced": 0, "paid": 0, "invoices": 0},
        {"month": "2027-02", "invoiced": 1500, "paid": 1000, "invoices": 2},
        {"month": "2027-01", "invoiced": 0, "paid": 0, "invoices": 0}]}
    assert len(staff.get("/v1/admin/billing/revenue-by-month?months=500").json()["months"]) == 36
    assert staff.get("/v1/admin/billing/revenue-by-month?months=0").status_code == 400


def test_every_workspaces_invoices(staff, workspace):
    InvoiceFactory(workspace=workspace)
    InvoiceFactory(workspace=WorkspaceFactory(slug="other"))
    first = staff.get("/v1/admin/billing/invoices?limit=1").json()
    second = staff.get(f"/v1/admin/billing/invoices?limit=1&cursor={first['nextCursor']}").json()
    assert {first["items"][0]["workspaceSlug"], second["items"][0]["workspaceSlug"]} == {"acme", "other"}
    assert second["nextCursor"] is None


def test_members_who_are_not_staff_get_403(alice_client, api):
    for path in ("/v1/admin/billing/revenue-by-month", "/v1/admin/billing/invoices"):
        resp = alice_client.get(path)
        assert resp.status_code == 403 and resp.json()["code"] == "forbidden"
        assert api.get(path).status_code == 401
