"""Admin of environments, variables (values never shown), findings and preview protection."""
from django.contrib import admin

from platform_app.models import Environment, EnvVar, EnvVarSlot, PreviewProtection, SecretFinding


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ("project", "name", "branch_pattern", "builtin")
    list_filter = ("builtin",)
    search_fields = ("project__slug", "name")
    list_select_related = ("project",)
    raw_id_fields = ("project",)


@admin.register(EnvVar)
class EnvVarAdmin(admin.ModelAdmin):
    list_display = ("project", "key", "type", "targets", "branch", "updated_at")
    list_filter = ("type",)
    search_fields = ("project__slug", "key")
    list_select_related = ("project",)
    exclude = ("value_encrypted",)
    readonly_fields = ("project", "key", "type", "targets", "branch", "created_at", "updated_at")


@admin.register(EnvVarSlot)
class EnvVarSlotAdmin(admin.ModelAdmin):
    """The (key, target, branch) slots variables hold; maintained by the variable services."""

    list_display = ("project", "key", "target", "branch", "env_var")
    search_fields = ("project__slug", "key")
    list_select_related = ("project", "env_var")
    readonly_fields = ("env_var", "project", "key", "target", "branch")


@admin.register(SecretFinding)
class SecretFindingAdmin(admin.ModelAdmin):
    list_display = ("project", "rule", "file", "line", "preview", "last_seen_at", "ignored_at", "imported_at")
    list_filter = ("rule",)
    search_fields = ("project__slug", "file")
    list_select_related = ("project",)
    raw_id_fields = ("project",)


@admin.register(PreviewProtection)
class PreviewProtectionAdmin(admin.ModelAdmin):
    list_display = ("project", "mode", "updated_at")
    list_filter = ("mode",)
    search_fields = ("project__slug",)
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    exclude = ("password_hash",)
