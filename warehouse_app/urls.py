"""Warehouse routes under /api/."""
from django.urls import include, path

urlpatterns = [
    path("", include("warehouse_app.urls_directory")),
    path("", include("warehouse_app.urls_commerce")),
]
