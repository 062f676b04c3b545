"""Admin of the deployments area. Cancel, redeploy and rollback call the same services as the API."""
from django.contrib import admin, messages
from django.utils.html import format_html

from config.client_ip import client_ip
from config.errors import ApplicationError
from platform_app.models import (Deployment, DeployHook, DeploymentEvent, DoctorReport, LogLine, RuntimeLogLine,
                                 SourceUpload, WebhookDelivery)
from platform_app.services.deployments.deployments import deployment_cancel, deployment_rollback, deployment_trigger
from platform_app.services.deployments.log_archive import log_lines

LOG_TAIL_LINES = 200


class DeploymentEventInline(admin.TabularInline):
    model = DeploymentEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("created_at", "type", "message")

    def has_add_permission(self, request, obj=None):
        return False


def _duration(deployment) -> str:
    end = deployment.finished_at or deployment.ready_at
    if deployment.started_at is None or end is None:
        return "-"
    seconds = int((end - deployment.started_at).total_seconds())
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


@admin.register(Deployment)
class DeploymentAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "workspace", "project", "env", "branch", "trigger", "created_at", "duration")
    list_filter = ("status", "env", "trigger", ("project__workspace", admin.RelatedOnlyFieldListFilter),
                   ("project", admin.RelatedOnlyFieldListFilter))
    search_fields = ("id", "branch", "commit_sha", "project__slug", "project__workspace__slug")
    list_select_related = ("project__workspace",)
    date_hierarchy = "created_at"
    raw_id_fields = ("project", "created_by")
    # Deployments are written by the build pipeline; staff act on them through the actions only.
    readonly_fields = ("id", "project", "env", "branch", "commit_sha", "trigger", "status", "error_message",
                       "created_by", "created_at", "started_at", "ready_at", "finished_at", "duration", "framework",
                       "artifact_path", "snapshot", "idempotency_key", "log_tail")
    inlines = [DeploymentEventInline]
    actions = ["cancel", "redeploy", "rollback"]

    @admin.display(description="workspace", ordering="project__workspace__slug")
    def workspace(self, obj):
        return obj.project.workspace

    @admin.display(description="duration")
    def duration(self, obj):
        return _duration(obj)

    @admin.display(description=f"log (last {LOG_TAIL_LINES} lines)")
    def log_tail(self, obj):
        lines = log_lines(obj.pk, tail=LOG_TAIL_LINES)
        text = "\n".join(f"{line.seq:>5} {line.stream:<6} {line.text}" for line in lines)
        return format_html('<pre style="max-height:40em;overflow:auto">{}</pre>', text or "(no output yet)")

    def has_add_permission(self, request):
        return False  # deployments start from a trigger (API, hook, Git push), which the redeploy action uses

    def _each(self, request, queryset, act, done: str):
        """Run `act` per deployment; one message each, the service's own message when it refuses."""
        for deployment in queryset.select_related("project__workspace"):
            try:
                result = act(deployment)
            except ApplicationError as error:
                self.message_user(request, f"{deployment.pk}: {error.message}", messages.ERROR)
            else:
                self.message_user(request, f"{deployment.pk}: {done.format(result=result)}", messages.SUCCESS)

    @admin.action(description="Cancel selected deployments")
    def cancel(self, request, queryset):
        self._each(request, queryset, lambda d: deployment_cancel(
            workspace=d.project.workspace, deployment_id=d.pk, actor=request.user), "canceled.")

    @admin.action(description="Redeploy selected deployments (same project, environment and branch)")
    def redeploy(self, request, queryset):
        self._each(request, queryset, lambda d: deployment_trigger(
            project=d.project, env=d.env, branch=d.branch, trigger=Deployment.Trigger.MANUAL, actor=request.user,
            ip=client_ip(request), source_id=d.source_upload_id), "redeploy queued as {result.pk}.")

    @admin.action(description="Roll production back to the selected deployment")
    def rollback(self, request, queryset):
        self._each(request, queryset, lambda d: deployment_rollback(
            project=d.project, deployment_id=d.pk, actor=request.user, ip=client_ip(request)),
            "now serves production of {result.project.slug}.")


@admin.register(DeploymentEvent)
class DeploymentEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "deployment", "type", "message")
    list_filter = ("type",)
    search_fields = ("deployment__id", "message")
    raw_id_fields = ("deployment",)
    readonly_fields = ("deployment", "type", "message", "created_at")


@admin.register(SourceUpload)
class SourceUploadAdmin(admin.ModelAdmin):
    """Folders sent to be built (`svc deploy`): kept once per content; a deployment that built one keeps it."""
    list_display = ("id", "project", "sha256", "files", "size", "uploaded_by", "created_at")
    search_fields = ("id", "sha256", "project__slug", "uploaded_by__email")
    list_select_related = ("project", "uploaded_by")
    readonly_fields = ("id", "project", "sha256", "size", "files", "storage_name", "uploaded_by", "created_at")


@admin.register(LogLine)
class LogLineAdmin(admin.ModelAdmin):
    list_display = ("deployment", "seq", "stream", "text", "created_at")
    list_filter = ("stream",)
    search_fields = ("deployment__id",)
    raw_id_fields = ("deployment",)
    readonly_fields = ("deployment", "seq", "stream", "text", "created_at")  # append-only


@admin.register(RuntimeLogLine)
class RuntimeLogLineAdmin(admin.ModelAdmin):
    list_display = ("deployment", "instance_id", "text", "created_at")
    search_fields = ("deployment__id", "instance_id")
    raw_id_fields = ("deployment",)
    readonly_fields = ("deployment", "instance_id", "text", "created_at")


@admin.register(DeployHook)
class DeployHookAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "project", "branch", "created_at", "last_triggered_at")
    search_fields = ("id", "name", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    exclude = ("secret_hash",)
    readonly_fields = ("id", "created_at", "last_triggered_at")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ("received_at", "provider", "delivery_id", "event", "deployments")
    list_filter = ("provider", "event")
    search_fields = ("delivery_id",)
    readonly_fields = ("provider", "delivery_id", "event", "received_at", "deployments")


@admin.register(DoctorReport)
class DoctorReportAdmin(admin.ModelAdmin):
    list_display = ("id", "deployment", "created_at", "pull_request_url")
    search_fields = ("id", "deployment__id")
    raw_id_fields = ("deployment",)
    readonly_fields = ("id", "deployment", "findings", "created_at")
