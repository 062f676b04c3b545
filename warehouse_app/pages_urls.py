"""Public directory pages under /warehouses/."""
from django.urls import path

from warehouse_app import views

urlpatterns = [
    path("warehouses/", views.home, name="warehouses-home"),
    path("warehouses/search/", views.search, name="warehouses-search"),
    path("warehouses/region/<str:region>/", views.search, name="warehouses-region"),
    path("warehouses/city/<str:city>/", views.search, name="warehouses-city"),
    path("warehouses/type/<str:type>/", views.search, name="warehouses-type"),
    path("warehouses/operator/<str:operator>/", views.search, name="warehouses-operator"),
    path("warehouses/<slug:slug>/", views.facility, name="warehouses-facility"),
]
