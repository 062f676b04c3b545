"""Warehouse pages under /warehouses/: the public directory (names may hold a slash, hence `path:`), sign-in,
the customer's space and the operator's inbox."""
from django.urls import path

from warehouse_app.pages import account, views

urlpatterns = [
    path("warehouses/", views.home, name="warehouses-home"),
    path("warehouses/search/", views.search, name="warehouses-search"),
    path("warehouses/region/<path:region>/map.svg", views.region_map_svg, name="warehouses-region-map"),
    path("warehouses/region/<path:region>/", views.search, name="warehouses-region"),
    path("warehouses/city/<path:city>/", views.search, name="warehouses-city"),
    path("warehouses/type/<str:type>/", views.search, name="warehouses-type"),
    path("warehouses/operator/<path:operator>/", views.search, name="warehouses-operator"),
    # Accounts
    path("warehouses/account/", account.account, name="warehouses-account"),
    path("warehouses/my/", account.my_space, name="warehouses-my"),
    path("warehouses/my/quotes/<str:reference>/book", account.quote_book, name="warehouses-quote-book"),
    path("warehouses/my/bookings/<str:reference>/", account.booking, name="warehouses-booking"),
    path("warehouses/my/bookings/<str:reference>/movements", account.movement_record, name="warehouses-movement"),
    path("warehouses/my/bookings/<str:reference>/cancel", account.booking_cancel, name="warehouses-booking-cancel"),
    path("warehouses/inbox/", account.inbox, name="warehouses-inbox"),
    path("warehouses/inbox/<str:reference>/answer", account.quote_answer, name="warehouses-quote-answer"),
    path("warehouses/inbox/<str:reference>/decline", account.quote_decline, name="warehouses-quote-decline"),
    # A facility
    path("warehouses/<slug:slug>/", views.facility, name="warehouses-facility"),
    path("warehouses/<slug:slug>/quote", account.quote_request, name="warehouses-quote"),
    path("warehouses/<slug:slug>/shortlist", account.shortlist, name="warehouses-shortlist"),
]
