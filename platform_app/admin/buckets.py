"""Admin of buckets (the secret never shown). Buckets are created and deleted through their service (the API or
the dashboard), which also remove the bucket and its IAM user at the endpoint: here staff only look."""
from django.contrib import admin

from platform_app.admin.base import ThroughServicesAdmin
from platform_app.models import Bucket


@admin.register(Bucket)
class BucketAdmin(ThroughServicesAdmin):
    list_display = ("name", "project", "status", "region", "objects_count", "bytes", "measured_at", "created_at")
    list_filter = ("status", "region")
    search_fields = ("name", "project__slug", "access_key_id")
    list_select_related = ("project",)
    raw_id_fields = ("project",)

    def has_delete_permission(self, request, obj=None):
        return False
