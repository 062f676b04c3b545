from django.apps import AppConfig


class PlatformAppConfig(AppConfig):
    name = "platform_app"
    verbose_name = "Deployment platform"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # model signals the services listen to, connected whichever process starts (web, worker, beat)
        from platform_app.services.agents import agents  # noqa: F401 - placement when a deployment is ready
        from platform_app.services.edge import hostcache  # noqa: F401 - the edge's hosts when a site changes
