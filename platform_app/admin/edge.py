"""Admin of the edge area: firewall rules and events, analytics settings, events and rollups."""
from django.contrib import admin

from platform_app.admin.base import ThroughServicesAdmin

from platform_app.models import (AnalyticsEvent, AnalyticsSettings, AnalyticsVisitor, AnalyticsVitalHour, FirewallEvent,
                                 FirewallRule)


@admin.register(FirewallRule)
class FirewallRuleAdmin(ThroughServicesAdmin):
    list_display = ("name", "project", "priority", "action", "enabled", "updated_at")
    list_filter = ("action", "enabled")
    search_fields = ("name", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    editable = ("enabled",)


@admin.register(FirewallEvent)
class FirewallEventAdmin(admin.ModelAdmin):
    list_display = ("at", "project", "action", "ip", "method", "path", "rule_id")
    list_filter = ("action",)
    search_fields = ("ip", "path", "project__slug", "rule_id")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    readonly_fields = ("project", "rule_id", "action", "ip", "method", "path", "user_agent", "at")


@admin.register(AnalyticsSettings)
class AnalyticsSettingsAdmin(admin.ModelAdmin):
    list_display = ("project", "enabled", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("project__slug",)
    raw_id_fields = ("project",)


@admin.register(AnalyticsEvent)
class AnalyticsEventAdmin(admin.ModelAdmin):
    list_display = ("at", "project", "type", "path", "name", "value", "referrer")
    list_filter = ("type", "name")
    search_fields = ("path", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project",)


@admin.register(AnalyticsVisitor)
class AnalyticsVisitorAdmin(admin.ModelAdmin):
    list_display = ("day", "project", "page_views", "referrer", "first_at")
    search_fields = ("project__slug", "referrer")
    list_select_related = ("project",)
    raw_id_fields = ("project",)


@admin.register(AnalyticsVitalHour)
class AnalyticsVitalHourAdmin(admin.ModelAdmin):
    list_display = ("hour", "project", "name", "path", "samples")
    list_filter = ("name",)
    search_fields = ("project__slug", "path")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
