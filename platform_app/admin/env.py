"""Admin of environments, variables (values never shown), findings and preview protection."""
from django.contrib import admin

from platform_app.models import Environment, EnvVar, PreviewProtection, SecretFinding


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ("project", "name", "branch_pattern", "builtin")
    search_fields = ("project__slug", "name")


@admin.register(EnvVar)
class EnvVarAdmin(admin.ModelAdmin):
    list_display = ("project", "key", "type", "targets", "branch", "updated_at")
    list_filter = ("type",)
    search_fields = ("project__slug", "key")
    exclude = ("value_encrypted",)
    readonly_fields = ("project", "key", "type", "targets", "branch", "created_at", "updated_at")


@admin.register(SecretFinding)
class SecretFindingAdmin(admin.ModelAdmin):
    list_display = ("project", "rule", "file", "line", "preview", "last_seen_at", "ignored_at", "imported_at")
    list_filter = ("rule",)
    search_fields = ("project__slug", "file")


@admin.register(PreviewProtection)
class PreviewProtectionAdmin(admin.ModelAdmin):
    list_display = ("project", "mode", "updated_at")
    exclude = ("password_hash",)
