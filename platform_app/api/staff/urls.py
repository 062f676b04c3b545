"""Routes of the staff area (mounted under /v1/), one module per feature listed here: the public status
(status.py), the staff reports (admin.py) and incidents (incidents.py)."""
from django.urls import path

from platform_app.api.staff import admin, incidents, status

urlpatterns = [
    # Public status
    path("status/public", status.StatusPublicView.as_view()),
    path("status/slo/<str:key>/history", status.SloHistoryView.as_view()),
    # Incidents (staff)
    path("admin/incidents", incidents.IncidentListView.as_view()),
    path("admin/incidents/<str:id>/updates", incidents.IncidentUpdateView.as_view()),
    # Reports (staff)
    path("admin/overview", admin.OverviewView.as_view()),
    path("admin/tiers", admin.TiersView.as_view()),
    path("admin/billing/revenue-by-month", admin.RevenueView.as_view()),
    path("admin/config", admin.ConfigView.as_view()),
    path("admin/deploy-failures", admin.DeployFailuresView.as_view()),
    path("admin/orgs", admin.OrgListView.as_view()),
    path("admin/orgs/<str:ref>", admin.OrgDetailView.as_view()),
    path("admin/users", admin.UserListView.as_view()),
    path("admin/deployments", admin.DeploymentListView.as_view()),
    path("admin/billing/invoices", admin.InvoiceListView.as_view()),
    path("admin/usage", admin.UsageListView.as_view()),
    path("admin/audit", admin.AuditListView.as_view()),
]
