"""Platform HTML pages: the dashboard."""
from django.urls import path

from platform_app.pages import views

urlpatterns = [
    path("", views.home, name="home"),
    path("dashboard/login/", views.sign_in, name="login"),
    path("dashboard/logout/", views.sign_out, name="logout"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/<str:org_id>/", views.workspace_page, name="dashboard-workspace"),
    path("dashboard/<str:org_id>/tokens/<str:token_id>/revoke", views.token_revoke, name="dashboard-token-revoke"),
]
