from django.apps import AppConfig


class PlatformAppConfig(AppConfig):
    name = "platform_app"
    verbose_name = "Deployment platform"
    default_auto_field = "django.db.models.BigAutoField"
