"""Platform HTML pages: the dashboard."""
from django.urls import path

from platform_app.api.domains.caddy_ask import caddy_ask
from platform_app.pages import domains, views

urlpatterns = [
    path("", views.home, name="home"),
    path("dashboard/login/", views.sign_in, name="login"),
    path("dashboard/logout/", views.sign_out, name="logout"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/<str:org_id>/", views.workspace_page, name="dashboard-workspace"),
    path("dashboard/<str:org_id>/tokens/<str:token_id>/revoke", views.token_revoke, name="dashboard-token-revoke"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/domains/", domains.domains_page, name="dashboard-domains"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/domains/<str:domain_id>/<str:action>", domains.domain_action,
         name="dashboard-domain-action"),
    # Caddy's on-demand TLS `ask` (docs/deployment.md, "Caddy"): not a page, not part of /v1
    path("internal/caddy/ask", caddy_ask, name="caddy-ask"),
]
