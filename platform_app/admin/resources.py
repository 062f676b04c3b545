"""Admin of add-ons, components and volumes. Credentials are never shown."""
from django.contrib import admin

from platform_app.models import Addon, Component, Volume


@admin.register(Addon)
class AddonAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "kind", "name", "status", "created_at", "deleted_at", "purged_at")
    list_filter = ("kind", "status")
    search_fields = ("id", "name", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    exclude = ("credentials_encrypted",)
    readonly_fields = ("id", "project", "kind", "status", "error_message", "created_at", "deleted_at", "purged_at")


class VolumeInline(admin.TabularInline):
    model = Volume
    extra = 0
    fields = readonly_fields = ("id", "name", "mount_path", "size_gb", "used_bytes", "node")

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Component)
class ComponentAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "name", "kind", "instance_size", "instances", "deployment", "created_at")
    list_filter = ("kind", "instance_size")
    search_fields = ("id", "name", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project", "deployment")
    inlines = [VolumeInline]


@admin.register(Volume)
class VolumeAdmin(admin.ModelAdmin):
    list_display = ("id", "component", "name", "mount_path", "size_gb", "used_bytes", "node")
    search_fields = ("id", "name", "component__name")
    list_select_related = ("component", "node")
    raw_id_fields = ("component", "node")
    readonly_fields = ("id", "used_bytes", "node")
