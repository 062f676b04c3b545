"""Dashboard pages of the billing area; their routes: the workspace's Cost (every member) and Billing (owners,
admins and billing members) tabs."""
from django.urls import path

from platform_app.pages.billing import billing, cost

urlpatterns = [
    path("dashboard/<str:org_id>/cost/", cost.cost_page, name="workspace-cost"),
    path("dashboard/<str:org_id>/billing/", billing.billing_page, name="workspace-billing"),
]
