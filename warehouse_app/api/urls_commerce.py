"""Warehouse account, quote, booking, stock and workspace routes, mounted under /api/."""
from django.urls import path

from warehouse_app.api import accounts, commerce

urlpatterns = [
    # Account
    path("auth/login", accounts.LoginView.as_view()),
    path("auth/signup", accounts.SignupView.as_view()),
    path("auth/logout", accounts.LogoutView.as_view()),
    path("auth/me", accounts.MeView.as_view()),
    path("account/password", accounts.PasswordView.as_view()),
    path("dashboard/stats", accounts.DashboardStatsView.as_view()),
    path("billing/usage", accounts.BillingUsageView.as_view()),
    # Rates and quotes
    path("rates", commerce.RatesView.as_view()),
    path("quotes/rfq", commerce.RfqView.as_view()),
    path("quotes", commerce.QuoteListView.as_view()),
    path("quotes/<str:reference>", commerce.QuoteDetailView.as_view()),
    path("quotes/<str:reference>/answer", commerce.QuoteAnswerView.as_view()),
    path("quotes/<str:reference>/decline", commerce.QuoteDeclineView.as_view()),
    # Bookings and stock
    path("bookings", commerce.BookingListView.as_view()),
    path("bookings/create", commerce.BookingCreateView.as_view()),
    path("bookings/<str:reference>", commerce.BookingDetailView.as_view()),
    path("bookings/<str:reference>/update", commerce.BookingUpdateView.as_view()),
    path("bookings/<str:reference>/cancel", commerce.BookingCancelView.as_view()),
    path("movements", commerce.MovementView.as_view()),
    path("inventory", commerce.InventoryView.as_view()),
    path("capacity", commerce.CapacityView.as_view()),
    # Workspace
    path("shortlist", commerce.ShortlistView.as_view()),
    path("support", commerce.SupportView.as_view()),
]
