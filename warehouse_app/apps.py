from django.apps import AppConfig


class WarehouseAppConfig(AppConfig):
    name = "warehouse_app"
    verbose_name = "Warehouse directory and booking"
    default_auto_field = "django.db.models.BigAutoField"
