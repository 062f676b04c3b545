"""Platform HTML pages (dashboards, status page)."""
from django.urls import path

from platform_app import views

urlpatterns = [
    path("", views.home, name="home"),
]
