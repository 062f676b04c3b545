"""Admin of custom domains (the verification token is shown: it is published in DNS anyway)."""
from django.contrib import admin

from platform_app.models import Domain


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "status", "primary", "redirect_to", "git_branch", "last_check_at",
                    "next_check_at")
    list_filter = ("status", "primary")
    search_fields = ("name", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    readonly_fields = ("verification_token", "verified_at", "status_changed_at", "last_check_at", "last_check_found",
                       "last_check_error", "check_failures", "created_at")
