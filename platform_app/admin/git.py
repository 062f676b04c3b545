"""Admin of Git connections (tokens never shown), installations and linked identities."""
from django.contrib import admin

from platform_app.models import GitConnection, GitInstallation, LinkedIdentity, OAuthState


@admin.register(GitConnection)
class GitConnectionAdmin(admin.ModelAdmin):
    list_display = ("workspace", "provider", "account", "installation_id", "created_at")
    list_filter = ("provider",)
    search_fields = ("workspace__slug", "account", "installation_id")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace", "created_by")
    exclude = ("token_encrypted",)


@admin.register(GitInstallation)
class GitInstallationAdmin(admin.ModelAdmin):
    list_display = ("installation_id", "account", "workspace", "created_at", "claimed_at")
    search_fields = ("installation_id", "account", "workspace__slug")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)


@admin.register(LinkedIdentity)
class LinkedIdentityAdmin(admin.ModelAdmin):
    list_display = ("user", "provider", "subject", "email", "created_at")
    list_filter = ("provider",)
    search_fields = ("user__email", "subject", "email")
    list_select_related = ("user",)
    raw_id_fields = ("user",)


@admin.register(OAuthState)
class OAuthStateAdmin(admin.ModelAdmin):
    list_display = ("id", "purpose", "provider", "user", "workspace", "created_at", "expires_at", "used_at")
    list_filter = ("purpose", "provider")
    search_fields = ("id", "user__email", "workspace__slug")
    list_select_related = ("user", "workspace")
    raw_id_fields = ("user", "workspace")
    exclude = ("state_hash", "code_verifier", "nonce")
    readonly_fields = ("id", "purpose", "provider", "user", "workspace", "return_to", "created_at", "expires_at",
                       "used_at")
