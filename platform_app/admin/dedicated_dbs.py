"""Admin of dedicated databases and their backups: staff see and filter them; they are made, restored and deleted
through the services (API, dashboard), which act on the cluster. Credentials are never shown."""
from django.contrib import admin

from platform_app.admin.base import ThroughServicesAdmin
from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup


@admin.register(DedicatedDatabase)
class DedicatedDatabaseAdmin(ThroughServicesAdmin):
    list_display = ("project", "name", "status", "provisioner", "parent", "database_name", "size_bytes", "created_at")
    list_filter = ("status", "provisioner")
    search_fields = ("project__slug", "name", "database_name", "role_name")
    list_select_related = ("project", "parent")
    raw_id_fields = ("project", "parent")
    exclude = ("credentials_encrypted",)

    def has_delete_permission(self, request, obj=None):
        return False  # deleting drops a database on the cluster: the API or the dashboard does it


@admin.register(DedicatedDatabaseBackup)
class DedicatedDatabaseBackupAdmin(admin.ModelAdmin):
    list_display = ("database", "kind", "status", "size_bytes", "created_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("database__name", "database__project__slug")
    list_select_related = ("database__project",)
    readonly_fields = ("database", "kind", "status", "size_bytes", "storage_name", "error", "created_at",
                       "finished_at")

    def has_add_permission(self, request):
        return False
