"""Routes of the edge area (mounted under /v1/). `P` = `orgs/<org_id>/projects/<project_id>`."""
from django.urls import path

from platform_app.api.edge import analytics, firewall

O = "orgs/<str:org_id>"
P = f"{O}/projects/<str:project_id>"

urlpatterns = [
    path(f"{P}/firewall/rules", firewall.FirewallRuleListView.as_view()),
    path(f"{P}/firewall/rules/<str:rule_id>", firewall.FirewallRuleDetailView.as_view()),
    path(f"{P}/firewall/events", firewall.FirewallEventListView.as_view()),
    path("analytics/<str:project_id>/svc.js", analytics.AnalyticsScriptView.as_view()),
    path("analytics/<str:project_id>/beacon", analytics.AnalyticsBeaconView.as_view()),
    path(f"{P}/analytics/overview", analytics.AnalyticsOverviewView.as_view()),
    path(f"{P}/analytics/top-paths", analytics.AnalyticsTopPathsView.as_view()),
    path(f"{P}/analytics/vitals", analytics.AnalyticsVitalsView.as_view()),
]
