"""What the admin modules share."""
from django.contrib import admin


class ThroughServicesAdmin(admin.ModelAdmin):
    """Rows whose rules live in their services (validation, normalisation, secrets, per-project limits): staff see,
    filter and delete them here, and create or change them through the API or the dashboard, which run those
    rules. Only the fields in `editable` (safe on their own, e.g. `enabled`) can be changed here. A secret is never
    shown."""

    editable: tuple = ()
    exclude = ("secret_encrypted",)

    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        hidden = set(self.exclude or ())
        return [f.name for f in self.model._meta.fields if f.name not in hidden and f.name not in self.editable]
