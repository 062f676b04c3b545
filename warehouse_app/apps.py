from django.apps import AppConfig


class WarehouseAppConfig(AppConfig):
    name = "warehouse_app"
    verbose_name = "Warehouse directory and booking"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from config.demo import demo_register
        from platform_app.services.identity.auth import session_kind_register
        from warehouse_app import demo
        from warehouse_app.authentication import SESSION_KIND

        # The warehouse's cookie sessions are platform sessions of its own kind, with their own JWT audience.
        session_kind_register(SESSION_KIND, audience="warehouse")
        demo_register("warehouse", demo.load)
