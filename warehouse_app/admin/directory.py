"""Admin of the directory: facilities are read-mostly (the import owns them)."""
from django.contrib import admin

from warehouse_app.models import DirectoryFacet, Facility, ImportRun
from warehouse_app.services.directory import facility_change


@admin.register(Facility)
class FacilityAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "type_code", "city", "region", "country", "floor_area_m2", "operator", "status")
    list_filter = ("status", "type_code", "country")
    search_fields = ("slug", "name", "city", "region", "operator", "osm_id")
    readonly_fields = ("slug", "osm_type", "osm_id", "name", "type_code", "city", "region", "country",
                       "floor_area_m2", "lat", "lon", "outline", "tags", "source_file", "imported_at", "withdrawn_at")

    def save_model(self, request, obj, form, change):
        if change and form.changed_data:  # the status or operator: through the service that dates and refreshes
            facility_change(facility=obj, fields=form.changed_data)


@admin.register(ImportRun)
class ImportRunAdmin(admin.ModelAdmin):
    list_display = ("source_file", "started_at", "finished_at", "kept", "created", "updated", "withdrawn")
    readonly_fields = [f.name for f in ImportRun._meta.fields]


@admin.register(DirectoryFacet)
class DirectoryFacetAdmin(admin.ModelAdmin):
    """Recomputed by the import; read-only here."""

    list_display = ("kind", "country", "region", "city", "type_code", "operator", "facility_count", "floor_area_m2")
    list_filter = ("kind", "country")
    search_fields = ("country", "region", "city", "type_code", "operator")
    readonly_fields = [f.name for f in DirectoryFacet._meta.fields]

    def has_add_permission(self, request):
        return False
