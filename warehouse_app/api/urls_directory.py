"""Warehouse directory routes (public), mounted under /api/."""
from django.urls import path

from warehouse_app.api import directory

urlpatterns = [
    path("warehouses", directory.FacilityListView.as_view()),
    path("warehouses/search", directory.FacilitySearchView.as_view()),
    path("warehouses/<slug:slug>", directory.FacilityDetailView.as_view()),
    path("regions", directory.RegionListView.as_view()),
    path("facility-types", directory.FacilityTypeListView.as_view()),
    path("cities", directory.CityListView.as_view()),
    path("operators", directory.OperatorListView.as_view()),
    path("health", directory.HealthView.as_view()),
]
