"""Admin of the MCP endpoint's OAuth clients and tokens: staff see who connected what, and revoke. Hashes never
show."""
from django.contrib import admin
from django.utils import timezone

from platform_app.models import McpAuthorizationCode, McpClient, McpToken


@admin.register(McpClient)
class McpClientAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "created_at")
    search_fields = ("id", "name")
    readonly_fields = ("id", "created_at")


@admin.register(McpAuthorizationCode)
class McpAuthorizationCodeAdmin(admin.ModelAdmin):
    list_display = ("client", "user", "created_at", "expires_at", "used_at")
    list_select_related = ("client", "user")
    exclude = ("code_hash",)
    readonly_fields = ("client", "user", "workspace", "redirect_uri", "code_challenge", "scopes", "resource",
                       "created_at", "expires_at", "used_at")

    def has_add_permission(self, request):
        return False


@admin.register(McpToken)
class McpTokenAdmin(admin.ModelAdmin):
    list_display = ("id", "client", "user", "workspace", "scopes", "expires_at", "revoked_at", "last_used_at")
    list_select_related = ("client", "user", "workspace")
    search_fields = ("id", "user__email", "client__name")
    exclude = ("access_hash", "refresh_hash")
    readonly_fields = ("id", "client", "user", "workspace", "scopes", "expires_at", "refresh_expires_at",
                       "revoked_at", "created_at", "last_used_at")
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
