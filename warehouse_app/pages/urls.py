"""Warehouse pages under /warehouses/ (config/urls.py): the public directory (names may hold a slash, hence
`path:`), sign-in, the customer's space and the operator's inbox."""
from django.urls import path

from warehouse_app.pages import account, views

urlpatterns = [
    path("", views.home, name="warehouses-home"),
    path("search/", views.search, name="warehouses-search"),
    path("region/<path:region>/map.svg", views.region_map_svg, name="warehouses-region-map"),
    path("region/<path:region>/", views.search, name="warehouses-region"),
    path("city/<path:city>/", views.search, name="warehouses-city"),
    path("type/<str:type>/", views.search, name="warehouses-type"),
    path("operator/<path:operator>/", views.search, name="warehouses-operator"),
    # Accounts
    path("account/", account.account, name="warehouses-account"),
    path("my/", account.my_space, name="warehouses-my"),
    path("my/quotes/<str:reference>/book", account.quote_book, name="warehouses-quote-book"),
    path("my/bookings/<str:reference>/", account.booking, name="warehouses-booking"),
    path("my/bookings/<str:reference>/movements", account.movement_record, name="warehouses-movement"),
    path("my/bookings/<str:reference>/cancel", account.booking_cancel, name="warehouses-booking-cancel"),
    path("inbox/", account.inbox, name="warehouses-inbox"),
    path("inbox/<str:reference>/answer", account.quote_answer, name="warehouses-quote-answer"),
    path("inbox/<str:reference>/decline", account.quote_decline, name="warehouses-quote-decline"),
    # A facility
    path("<slug:slug>/", views.facility, name="warehouses-facility"),
    path("<slug:slug>/quote", account.quote_request, name="warehouses-quote"),
    path("<slug:slug>/shortlist", account.shortlist, name="warehouses-shortlist"),
]
