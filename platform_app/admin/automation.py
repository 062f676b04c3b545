"""Admin of cron jobs and runs, log drains and deliveries, alert rules and alerts (secrets never shown; jobs,
drains and rules are created and changed through their services: ThroughServicesAdmin)."""
from django.contrib import admin

from platform_app.admin.base import ThroughServicesAdmin
from platform_app.models import Alert, AlertRule, CronJob, CronRun, LogDrain, LogDrainDelivery


@admin.register(CronJob)
class CronJobAdmin(ThroughServicesAdmin):
    list_display = ("project", "schedule", "timezone", "path", "branch", "enabled", "retries", "created_at")
    list_filter = ("enabled",)
    search_fields = ("project__slug", "path")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    editable = ("enabled",)


@admin.register(CronRun)
class CronRunAdmin(admin.ModelAdmin):
    list_display = ("job", "scheduled_for", "status", "status_code", "duration_ms", "attempts")
    list_filter = ("status",)
    search_fields = ("job__project__slug", "job__path")
    list_select_related = ("job__project",)
    readonly_fields = ("job", "scheduled_for", "status", "attempts", "started_at", "finished_at", "duration_ms",
                       "status_code", "response_head", "error", "created_at")


@admin.register(LogDrain)
class LogDrainAdmin(ThroughServicesAdmin):
    list_display = ("project", "url", "format", "status", "failures", "last_delivery_at", "last_error")
    list_filter = ("status", "format")
    search_fields = ("project__slug", "url")
    list_select_related = ("project",)
    raw_id_fields = ("project",)


@admin.register(LogDrainDelivery)
class LogDrainDeliveryAdmin(admin.ModelAdmin):
    list_display = ("drain", "at", "lines", "test", "delivered", "status_code", "duration_ms", "error")
    list_filter = ("delivered", "test")
    list_select_related = ("drain__project",)
    readonly_fields = ("drain", "at", "lines", "test", "delivered", "status_code", "duration_ms", "error")


@admin.register(AlertRule)
class AlertRuleAdmin(ThroughServicesAdmin):
    list_display = ("project", "name", "metric", "threshold", "window_minutes", "state", "last_value",
                    "last_evaluated_at")
    list_filter = ("metric", "state")
    search_fields = ("project__slug", "name")
    list_select_related = ("project",)
    raw_id_fields = ("project",)


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("rule", "value", "source", "fired_at", "resolved_at")
    list_filter = ("source",)
    search_fields = ("rule__project__slug", "rule__name")
    list_select_related = ("rule__project",)
    readonly_fields = ("rule", "value", "source", "message", "fired_at", "resolved_at", "notifications")
