"""Admin of the org area: single sign-on settings, identities and sessions, the IP allowlist, SCIM records (all
changed through their services: seen, filtered and deleted here; secrets and token hashes never shown), the feedback
inbox (triaged here too: status, assignee, note, delete) and growth events and weekly reviews (read only)."""
from django.contrib import admin, messages

from platform_app.admin.base import ThroughServicesAdmin
from platform_app.models import (Feedback, GrowthEvent, IpAllowlistEntry, ScimGroup, ScimUser, SsoIdentity,
                                 SsoSession, WeeklyReview, WorkspaceSso)
from platform_app.services.org import feedback as feedback_services
from platform_app.services.org.growth import growth_review_compute


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by the platform itself: staff look and may delete."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(WorkspaceSso)
class WorkspaceSsoAdmin(ThroughServicesAdmin):
    list_display = ("workspace", "enabled", "issuer", "client_id", "require_sso", "default_role", "scim_enabled",
                    "updated_at")
    list_filter = ("enabled", "require_sso", "scim_enabled")
    search_fields = ("workspace__slug", "issuer", "client_id")
    list_select_related = ("workspace",)
    exclude = ("client_secret_encrypted", "scim_token_hash")


@admin.register(SsoIdentity)
class SsoIdentityAdmin(ReadOnlyAdmin):
    list_display = ("workspace", "user", "email", "subject", "issuer", "created_at", "last_sign_in_at")
    search_fields = ("workspace__slug", "user__email", "email", "subject")
    list_select_related = ("workspace", "user")


@admin.register(SsoSession)
class SsoSessionAdmin(ReadOnlyAdmin):
    list_display = ("session", "workspace", "created_at")
    search_fields = ("workspace__slug", "session__user__email")
    list_select_related = ("workspace", "session__user")


@admin.register(IpAllowlistEntry)
class IpAllowlistEntryAdmin(ThroughServicesAdmin):
    list_display = ("workspace", "cidr", "note", "created_by", "created_at")
    search_fields = ("workspace__slug", "cidr", "note")
    list_select_related = ("workspace", "created_by")


@admin.register(ScimUser)
class ScimUserAdmin(ThroughServicesAdmin):
    list_display = ("user_name", "workspace", "user", "active", "account_created", "role_managed", "updated_at")
    list_filter = ("active", "account_created")
    search_fields = ("user_name", "external_id", "workspace__slug", "user__email")
    list_select_related = ("workspace", "user")


@admin.register(ScimGroup)
class ScimGroupAdmin(ThroughServicesAdmin):
    list_display = ("display_name", "workspace", "updated_at")
    search_fields = ("display_name", "external_id", "workspace__slug")
    list_select_related = ("workspace",)
    exclude = ("members",)
    readonly_fields = ("member_names",)

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "member_names"]

    @admin.display(description="members")
    def member_names(self, obj):
        return ", ".join(m.user_name for m in obj.members.all()) or "—"


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    """The inbox: staff set status, assignee and note, and delete; the message is as it was sent."""

    list_display = ("created_at", "category", "status", "summary", "email", "user", "assignee", "page")
    list_filter = ("status", "category")
    search_fields = ("message", "email", "user__email", "page", "note")
    list_select_related = ("user", "assignee")
    readonly_fields = ("message", "category", "page", "email", "user", "ip", "created_at", "updated_at")
    fields = ("message", "category", "page", "email", "user", "ip", "created_at", "updated_at", "status", "assignee",
              "note")
    actions = ("mark_triaged", "mark_done")

    def has_add_permission(self, request):
        return False

    @admin.display(description="message")
    def summary(self, obj):
        return obj.message[:80]

    def _mark(self, request, queryset, status):
        for item in queryset:
            feedback_services.feedback_update(feedback_id=item.pk, status=status)
        messages.success(request, f"{queryset.count()} marked {status}.")

    @admin.action(description="Mark triaged")
    def mark_triaged(self, request, queryset):
        self._mark(request, queryset, Feedback.Status.TRIAGED)

    @admin.action(description="Mark done")
    def mark_done(self, request, queryset):
        self._mark(request, queryset, Feedback.Status.DONE)


@admin.register(GrowthEvent)
class GrowthEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "event", "source", "user", "workspace")
    list_filter = ("event", "source")
    search_fields = ("event", "user__email", "workspace__slug")
    list_select_related = ("user", "workspace")


@admin.register(WeeklyReview)
class WeeklyReviewAdmin(ReadOnlyAdmin):
    list_display = ("week", "active_workspaces", "sign_ups", "deployments", "failure_rate", "revenue", "computed_at")
    actions = ("recompute",)

    @admin.action(description="Compute again")
    def recompute(self, request, queryset):
        for review in queryset:
            growth_review_compute(week=review.week)
        messages.success(request, f"{queryset.count()} week(s) computed again.")
