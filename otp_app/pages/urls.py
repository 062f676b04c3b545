"""The OTP console, mounted at /dashboard/otp/."""
from django.urls import path

from otp_app.pages import views

urlpatterns = [
    path("", views.console_home, name="otp-console"),
    path("<str:org_id>/", views.console_workspace, name="otp-console-workspace"),
    path("<str:org_id>/keys/<str:key_id>/revoke", views.console_key_revoke, name="otp-console-key-revoke"),
]
