from django.apps import AppConfig


class OtpAppConfig(AppConfig):
    name = "otp_app"
    verbose_name = "One-time-code delivery"
    default_auto_field = "django.db.models.BigAutoField"
