"""Admin of nodes (agents and builders), their invites, the instances they run and the build jobs they take.
Token hashes are never shown."""
from django.contrib import admin

from platform_app.models import AgentInvite, AgentNode, BuildJob, Instance


@admin.register(AgentInvite)
class AgentInviteAdmin(admin.ModelAdmin):
    list_display = ("id", "workspace", "created_by", "created_at", "expires_at", "used_at")
    search_fields = ("id", "workspace__slug")
    list_select_related = ("workspace", "created_by")
    raw_id_fields = ("workspace", "created_by")
    exclude = ("token_hash",)
    readonly_fields = ("id", "workspace", "created_by", "created_at", "used_at")


class InstanceInline(admin.TabularInline):
    model = Instance
    extra = 0
    can_delete = False
    fields = readonly_fields = ("id", "deployment", "status", "port", "pid", "error", "updated_at")

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(AgentNode)
class AgentNodeAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "workspace", "status", "host", "runtimes", "capacity", "sandbox_runner",
                    "last_heartbeat_at")
    list_filter = ("status", ("workspace", admin.RelatedOnlyFieldListFilter))
    search_fields = ("id", "name", "host", "workspace__slug")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)
    exclude = ("token_hash",)
    readonly_fields = ("id", "workspace", "sandbox", "last_heartbeat_at", "created_at")
    inlines = [InstanceInline]

    @admin.display(description="sandbox")
    def sandbox_runner(self, obj):
        return (obj.sandbox or {}).get("runner", "-")


@admin.register(Instance)
class InstanceAdmin(admin.ModelAdmin):
    list_display = ("id", "deployment", "node", "status", "port", "pid", "updated_at")
    list_filter = ("status",)
    search_fields = ("id", "deployment__id", "node__name")
    list_select_related = ("deployment", "node")
    raw_id_fields = ("deployment", "node")
    readonly_fields = ("id", "created_at", "updated_at")


@admin.register(BuildJob)
class BuildJobAdmin(admin.ModelAdmin):
    """Jobs are written by the build pipeline and the builders; staff read them."""

    list_display = ("deployment", "state", "node", "created_at", "claimed_at", "finished_at")
    list_filter = ("state",)
    search_fields = ("deployment__id", "node__name")
    list_select_related = ("deployment", "node")
    exclude = ("token_hash",)
    readonly_fields = ("deployment", "spec", "source", "state", "node", "created_at", "claimed_at", "finished_at")

    def has_add_permission(self, request):
        return False
