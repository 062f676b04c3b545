"""The code console, mounted at /dashboard/otp/."""
from django.urls import path

from otp_app.pages import views

urlpatterns = [
    path("", views.console_home, name="otp-console"),
    path("<str:org_id>/", views.console_workspace, name="otp-console-workspace"),
    path("<str:org_id>/keys/<str:key_id>/revoke", views.console_key_revoke, name="otp-console-key-revoke"),
    path("<str:org_id>/log/", views.console_log, name="otp-console-log"),
    path("<str:org_id>/sandbox/", views.console_sandbox, name="otp-console-sandbox"),
    path("<str:org_id>/sandbox/send", views.console_test_send, name="otp-console-test-send"),
    path("<str:org_id>/sandbox/verify", views.console_test_verify, name="otp-console-test-verify"),
    path("<str:org_id>/routing/", views.console_routing, name="otp-console-routing"),
]
