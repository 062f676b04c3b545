from django.apps import AppConfig


class CountersConfig(AppConfig):
    name = "config.counters"
    label = "counters"
    verbose_name = "Rate-limit counters"
    default_auto_field = "django.db.models.BigAutoField"
