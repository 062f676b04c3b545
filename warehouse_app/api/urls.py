"""Warehouse routes under /api/."""
from django.urls import include, path

urlpatterns = [
    path("", include("warehouse_app.api.urls_directory")),
    path("", include("warehouse_app.api.urls_commerce")),
]
