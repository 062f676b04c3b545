"""OTP routes under /api/v1/."""
from django.urls import path

from otp_app.api import views as api

urlpatterns = [
    path("otp/send", api.SendView.as_view()),
    path("otp/verify", api.VerifyView.as_view()),
    path("otp/resend", api.ResendView.as_view()),
    path("otp/<str:record_id>", api.StatusView.as_view()),
    path("balance", api.BalanceView.as_view()),
    path("sandbox/messages", api.SandboxMessagesView.as_view()),
    path("callbacks/twilio", api.TwilioCallbackView.as_view()),
]
