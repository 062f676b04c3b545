"""Admin of graduations (exports) and redemptions: read-only; neither the code's hash nor the bundle is shown."""
from django.contrib import admin

from platform_app.models import Graduation, GraduationRedemption


@admin.register(Graduation)
class GraduationAdmin(admin.ModelAdmin):
    list_display = ("id", "workspace", "project", "created_by", "expires_at", "redeemed_at", "created_at")
    list_filter = ("redeemed_at",)
    search_fields = ("id", "project__slug", "workspace__slug")
    list_select_related = ("workspace", "project", "created_by")
    exclude = ("code_hash", "bundle")

    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields if f.name not in self.exclude]


@admin.register(GraduationRedemption)
class GraduationRedemptionAdmin(admin.ModelAdmin):
    list_display = ("bundle_id", "origin", "workspace", "project", "redeemed_by", "redeemed_at")
    search_fields = ("bundle_id", "origin", "workspace__slug", "project__slug")
    list_select_related = ("workspace", "project", "redeemed_by")

    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]
