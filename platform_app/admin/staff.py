"""Admin of incidents and status probe samples, and the admin index's overview: the same numbers as
`GET /v1/admin/overview` (platform_app.services.staff.selectors.overview), shown above the model list."""
from django.contrib import admin

from platform_app.models import Incident, IncidentUpdate, ProbeHour, ProbeSample

admin.site.index_template = "admin/platform_index.html"  # the overview (templatetags/staff_admin.py), then the apps


class IncidentUpdateInline(admin.TabularInline):
    model = IncidentUpdate
    extra = 0
    fields = ("status", "message", "created_by", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False  # updates go through the service (it moves the incident's status): /staff/incidents/


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    """Written through /staff/incidents/ or the API (the service keeps the status and its updates in step);
    here staff read and delete them."""

    list_display = ("title", "impact", "status", "started_at", "resolved_at")
    list_filter = ("status", "impact")
    search_fields = ("title",)
    readonly_fields = ("title", "impact", "status", "components", "started_at", "resolved_at", "created_by")
    inlines = (IncidentUpdateInline,)

    def has_add_permission(self, request):
        return False


@admin.register(IncidentUpdate)
class IncidentUpdateAdmin(admin.ModelAdmin):
    list_display = ("incident", "status", "created_at")
    list_filter = ("status",)
    list_select_related = ("incident",)
    readonly_fields = ("incident", "status", "message", "created_by", "created_at")

    def has_add_permission(self, request):
        return False


@admin.register(ProbeSample)
class ProbeSampleAdmin(admin.ModelAdmin):
    list_display = ("probe", "at", "good", "latency_ms", "detail")
    list_filter = ("probe", "good")
    date_hierarchy = "at"
    readonly_fields = ("probe", "at", "good", "latency_ms", "detail", "ref")

    def has_add_permission(self, request):
        return False


@admin.register(ProbeHour)
class ProbeHourAdmin(admin.ModelAdmin):
    list_display = ("probe", "hour", "samples", "good", "p95_ms")
    list_filter = ("probe",)
    readonly_fields = ("probe", "hour", "samples", "good", "p95_ms")

    def has_add_permission(self, request):
        return False
