"""Admin of Git connections (tokens never shown), installations and linked identities."""
from django.contrib import admin

from platform_app.models import GitConnection, GitInstallation, LinkedIdentity


@admin.register(GitConnection)
class GitConnectionAdmin(admin.ModelAdmin):
    list_display = ("workspace", "provider", "account", "installation_id", "created_at")
    list_filter = ("provider",)
    exclude = ("token_encrypted",)


@admin.register(GitInstallation)
class GitInstallationAdmin(admin.ModelAdmin):
    list_display = ("installation_id", "account", "workspace", "created_at", "claimed_at")


@admin.register(LinkedIdentity)
class LinkedIdentityAdmin(admin.ModelAdmin):
    list_display = ("user", "provider", "subject", "email", "created_at")
    search_fields = ("user__email", "subject", "email")
