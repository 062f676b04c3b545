"""Staff views of the identity and workspace models. Secrets (hashes) are never listed."""
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from platform_app.services.identity.email_verification import email_change
from platform_app.models import (AnswerStamp, ApiToken, AttemptCounter, AuditEvent, AuthSession, DeviceAuthorization,
                                 Membership, RefreshToken, User, Workspace)


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = ("email", "name", "is_staff", "is_active", "email_verified_at", "date_joined", "last_login")
    list_filter = ("is_staff", "is_active")
    search_fields = ("email", "name")
    readonly_fields = ("id", "date_joined", "last_login")
    fieldsets = (
        (None, {"fields": ("id", "email", "name", "password")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("date_joined", "last_login", "email_verified_at")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "name", "password1", "password2")}),)

    def save_model(self, request, obj, form, change):
        new_email = obj.email
        if change and "email" in form.changed_data:
            obj.email = form.initial["email"]  # changed below by the one function that also clears verification
        super().save_model(request, obj, form, change)
        if change:
            email_change(user=obj, email=new_email)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "id", "created_at")
    search_fields = ("slug", "name", "id")
    inlines = [MembershipInline]


@admin.register(AnswerStamp)
class AnswerStampAdmin(admin.ModelAdmin):
    """Shown, never changed: only the database's triggers move a stamp, and one set back could send answers kept
    under its old value again (platform_app/api/kept.py)."""

    list_display = ("workspace_id", "version")
    search_fields = ("workspace_id",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "workspace", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__email", "workspace__slug")
    list_select_related = ("user", "workspace")
    raw_id_fields = ("user", "workspace")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "user", "workspace", "scopes", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__email")
    list_select_related = ("user", "workspace")
    exclude = ("token_hash",)
    readonly_fields = ("id", "prefix", "user", "workspace", "scopes", "created_at", "last_used_at")


@admin.register(DeviceAuthorization)
class DeviceAuthorizationAdmin(admin.ModelAdmin):
    """Device logins (`svc login`): who approved what; the codes are hashes and never shown."""
    list_display = ("client_id", "status", "user", "workspace", "granted_scopes", "created_at", "expires_at")
    list_filter = ("status",)
    search_fields = ("client_id", "user__email")
    list_select_related = ("user", "workspace")
    exclude = ("device_code_hash", "user_code_hash")
    readonly_fields = ("client_id", "scopes", "status", "user", "workspace", "granted_scopes", "token", "created_at",
                       "expires_at", "polled_at")


@admin.register(AuthSession)
class AuthSessionAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "kind", "ip", "created_at", "last_used_at", "revoked_at")
    list_filter = ("kind",)
    search_fields = ("user__email", "ip")
    list_select_related = ("user",)
    raw_id_fields = ("user",)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "workspace", "actor", "action", "target_type", "target_id")
    list_filter = ("action",)
    search_fields = ("action", "target_id", "workspace__slug", "actor__email")
    list_select_related = ("workspace", "actor")
    readonly_fields = [f.name for f in AuditEvent._meta.fields]


@admin.register(RefreshToken)
class RefreshTokenAdmin(admin.ModelAdmin):
    list_display = ("id", "session", "created_at", "expires_at", "used_at")
    search_fields = ("session__id", "session__user__email")
    list_select_related = ("session__user",)
    raw_id_fields = ("session",)
    exclude = ("token_hash",)
    readonly_fields = ("session", "created_at", "expires_at", "used_at")


@admin.register(AttemptCounter)
class AttemptCounterAdmin(admin.ModelAdmin):
    """Sign-in and MFA attempt windows; deleting a row lifts that key's limit for the rest of its window."""

    list_display = ("key", "window_start", "count", "slowed", "not_before", "expires_at")
    search_fields = ("key",)
    readonly_fields = ("key", "window_start", "expires_at", "count", "slowed", "not_before")

    def has_add_permission(self, request):
        return False  # written only by the throttle's atomic upserts
