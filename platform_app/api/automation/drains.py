"""Log drains (P = /v1/orgs/{orgId}/projects/{projectId})."""
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import LogDrain
from platform_app.services.automation import drains as services
from platform_app.services.automation.secret_urls import url_masked

SOURCE = field_with_schema({"type": "string", "enum": list(services.SOURCES)})
FORMAT = field_with_schema({"type": "string", "enum": ["json", "ndjson"]})


class LogDrainSerializer(ModelSerializer):
    """`url` whole only with `reveal_secrets` in the context (callers holding `admin`), else masked."""

    url = serializers.CharField(help_text="Whole for callers holding `admin`; for others its credentials (userinfo, "
                                          "query values, key-like path segments) read ****.")
    format = FORMAT(read_only=True)
    status = serializers.CharField(read_only=True, help_text="`active`, or `paused` after repeated failures "
                                                             "(`lastError` says why; a delivered test resumes it)")

    class Meta:
        model = LogDrain
        fields = ("id", "url", "format", "sources", "environments", "sampling_rate", "status", "last_delivery_at",
                  "last_error", "failures", "created_at")

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not self.context.get("reveal_secrets"):
            data["url"] = url_masked(data["url"])
        return data


class LogDrainCreatedSerializer(LogDrainSerializer):
    secret = serializers.CharField(help_text="Signs every delivery (`x-svc-signature`); shown only here.")

    class Meta(LogDrainSerializer.Meta):
        fields = (*LogDrainSerializer.Meta.fields, "secret")


class LogDrainInput(InputSerializer):
    url = serializers.CharField(max_length=2048, help_text="https; checked by the outbound guard.")
    format = FORMAT(max_length=8, default="json")
    sources = serializers.ListField(child=SOURCE(max_length=16), min_length=1, max_length=4)
    environments = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list,
                                         max_length=20, help_text="Empty: every environment.")
    sampling_rate = serializers.FloatField(default=1.0, help_text="Share of lines sent, above 0 and at most 1.")


DrainTestSerializer = inline_serializer("LogDrainTestResult", {
    "delivered": serializers.BooleanField(), "status_code": serializers.IntegerField(allow_null=True),
    "duration_ms": serializers.IntegerField(), "error": serializers.CharField(allow_null=True)})


class LogDrainListView(PlatformView):
    @endpoint(scope="read", response=LogDrainSerializer(many=True), summary="Log drains of a project")
    def get(self, request, org_id, project_id):
        return cursor_page(request, services.drains_list(project=self.project(project_id)), LogDrainSerializer,
                           context={"request": request, "reveal_secrets": self.holds("admin")})

    @endpoint(scope="admin", status=201, request=LogDrainInput, response=LogDrainCreatedSerializer,
              summary="Add a log drain (its secret is shown once)",
              description="The URL must be https and outside the platform's networks (one generic 400 otherwise).")
    def post(self, request, org_id, project_id):
        v = validated(LogDrainInput, request)
        drain, secret = services.drain_create(project=self.project(project_id), url=v["url"], format=v["format"],
                                              sources=v["sources"], environments=v["environments"],
                                              sampling_rate=v["sampling_rate"])
        drain.secret = secret
        return Response(LogDrainCreatedSerializer(drain, context={"reveal_secrets": True}).data, status=201)


class LogDrainDetailView(PlatformView):
    @endpoint(scope="admin", response=inline_serializer("LogDrainDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete a log drain")
    def delete(self, request, org_id, project_id, drain_id):
        services.drain_delete(project=self.project(project_id), drain_id=drain_id)
        return Response({"deleted": True})


class LogDrainTestView(PlatformView):
    @endpoint(scope="admin", status=201, response=DrainTestSerializer, summary="Send a signed test message now",
              description="A paused drain that receives it is active again.")
    def post(self, request, org_id, project_id, drain_id):
        delivery = services.drain_test(project=self.project(project_id), drain_id=drain_id)
        return Response({"delivered": delivery.delivered, "status_code": delivery.status_code,
                         "duration_ms": delivery.duration_ms, "error": delivery.error or None}, status=201)
