"""Public directory pages under /warehouses/ (names may hold a slash, hence `path:`)."""
from django.urls import path

from warehouse_app.pages import views

urlpatterns = [
    path("warehouses/", views.home, name="warehouses-home"),
    path("warehouses/search/", views.search, name="warehouses-search"),
    path("warehouses/region/<path:region>/", views.search, name="warehouses-region"),
    path("warehouses/city/<path:city>/", views.search, name="warehouses-city"),
    path("warehouses/type/<str:type>/", views.search, name="warehouses-type"),
    path("warehouses/operator/<path:operator>/", views.search, name="warehouses-operator"),
    path("warehouses/<slug:slug>/", views.facility, name="warehouses-facility"),
]
