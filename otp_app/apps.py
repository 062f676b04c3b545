from django.apps import AppConfig


class OtpAppConfig(AppConfig):
    name = "otp_app"
    verbose_name = "One-time-code delivery"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from config.demo import demo_register
        from otp_app import demo
        from otp_app.services import config_cache  # noqa: F401 - connects the signals that invalidate it

        demo_register("otp", demo.load)
