"""Admin of the teams area: invitations, projects, project groups."""
from django.contrib import admin

from platform_app.models import Invitation, Project, ProjectGroup


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("email", "workspace", "role", "status", "created_at", "expires_at")
    list_filter = ("status", "role")
    search_fields = ("email", "workspace__slug", "workspace__name")
    list_select_related = ("workspace",)
    exclude = ("token_hash",)
    readonly_fields = ("workspace", "email", "role", "status", "invited_by", "created_at", "expires_at",
                       "answered_at")


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "workspace", "source", "framework", "production_branch", "auto_deploy",
                    "created_at")
    list_filter = ("source", "framework", "auto_deploy")
    search_fields = ("slug", "name", "workspace__slug", "git_url", "git_repo")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace", "group", "production_deployment")


@admin.register(ProjectGroup)
class ProjectGroupAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "workspace", "created_at")
    search_fields = ("slug", "name", "workspace__slug")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)
