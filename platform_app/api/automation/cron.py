"""Cron jobs and their runs (P = /v1/orgs/{orgId}/projects/{projectId})."""
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import CronJob, CronRun
from platform_app.services.automation import cron as services


RUN_STATUS = field_with_schema({"type": "string", "enum": list(CronRun.Status.values)})


class CronRunSerializer(ModelSerializer):
    status = RUN_STATUS(read_only=True, help_text="queued and running while it goes; then succeeded, failed or skipped")

    class Meta:
        model = CronRun
        fields = ("id", "scheduled_for", "started_at", "finished_at", "duration_ms", "status", "status_code", "error",
                  "attempts", "response_head")


class CronJobSerializer(ModelSerializer):
    next_runs = serializers.SerializerMethodField()
    last_run = serializers.SerializerMethodField()

    class Meta:
        model = CronJob
        fields = ("id", "schedule", "timezone", "path", "branch", "enabled", "retries", "next_runs", "last_run",
                  "created_at", "updated_at")

    @extend_schema_field({"type": "array", "items": {"type": "string", "format": "date-time"}})
    def get_next_runs(self, obj):
        return [serializers.DateTimeField().to_representation(t) for t in services.next_runs(obj)]

    @extend_schema_field(CronRunSerializer(allow_null=True))
    def get_last_run(self, obj):
        run = services.last_run(obj)
        return CronRunSerializer(run).data if run else None


class CronJobCreatedSerializer(CronJobSerializer):
    secret = serializers.CharField(help_text="Sent as `x-svc-cron-secret` with every call; shown only here.")

    class Meta(CronJobSerializer.Meta):
        fields = (*CronJobSerializer.Meta.fields, "secret")


class CronInput(InputSerializer):
    schedule = serializers.CharField(max_length=120, help_text="Five fields: minute hour day month weekday.")
    path = serializers.CharField(max_length=1024, help_text="A path of the project's site, e.g. /api/cron.")
    timezone = serializers.CharField(max_length=64, default="UTC", help_text="IANA name; default UTC.")
    branch = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                   help_text="Call the newest ready deployment of this branch instead of production.")
    enabled = serializers.BooleanField(default=True)
    retries = serializers.IntegerField(default=0, min_value=0, max_value=3,
                                       help_text="Further attempts after a failed call (none by default).")


class CronUpdateInput(InputSerializer):
    enabled = serializers.BooleanField(required=False)
    schedule = serializers.CharField(max_length=120, required=False)
    path = serializers.CharField(max_length=1024, required=False)
    timezone = serializers.CharField(max_length=64, required=False)
    retries = serializers.IntegerField(required=False, min_value=0, max_value=3)
    rotate_secret = serializers.BooleanField(required=False, default=False,
                                             help_text="A new secret, returned once in this answer as `secret`.")


class CronListView(PlatformView):
    @endpoint(scope="read", response=CronJobSerializer(many=True), summary="Cron jobs of a project")
    def get(self, request, org_id, project_id):
        return cursor_page(request, services.cron_jobs_list(project=self.project(project_id)), CronJobSerializer)

    @endpoint(scope="admin", status=201, request=CronInput, response=CronJobCreatedSerializer,
              summary="Add a cron job (its secret is shown once)")
    def post(self, request, org_id, project_id):
        v = validated(CronInput, request)
        job, secret = services.cron_job_create(project=self.project(project_id), schedule=v["schedule"],
                                               path=v["path"], timezone_name=v["timezone"], branch=v["branch"],
                                               enabled=v["enabled"], retries=v["retries"])
        job.secret = secret
        return Response(CronJobCreatedSerializer(job).data, status=201)


class CronDetailView(PlatformView):
    @endpoint(scope="admin", request=CronUpdateInput, response=CronJobSerializer,
              summary="Enable or disable a cron job, change its schedule or path, rotate its secret",
              description="With `rotateSecret: true` the answer carries the new `secret` (once).")
    def patch(self, request, org_id, project_id, cron_id):
        v = validated(CronUpdateInput, request)
        job, secret = services.cron_job_update(project=self.project(project_id), cron_id=cron_id,
                                               enabled=v.get("enabled"), schedule=v.get("schedule"),
                                               path=v.get("path"), timezone_name=v.get("timezone"),
                                               retries=v.get("retries"), rotate_secret=v["rotate_secret"])
        data = CronJobSerializer(job).data
        if secret:
            data["secret"] = secret
        return Response(data)

    @endpoint(scope="admin", response=inline_serializer("CronDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete a cron job and its runs")
    def delete(self, request, org_id, project_id, cron_id):
        services.cron_job_delete(project=self.project(project_id), cron_id=cron_id)
        return Response({"deleted": True})


class CronRunListView(PlatformView):
    @endpoint(scope="read", response=CronRunSerializer(many=True), summary="Runs of a cron job, newest first")
    def get(self, request, org_id, project_id, cron_id):
        runs = services.cron_runs_list(project=self.project(project_id), cron_id=cron_id)
        return cursor_page(request, runs, CronRunSerializer, order_field="scheduled_for")
