"""Buckets (P = /v1/orgs/{orgId}/projects/{projectId}): S3-compatible object storage (docs/buckets.md)."""
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ValidationFailed
from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint
from platform_app.models import Bucket
from platform_app.services.resources import buckets as services


class BucketSerializer(ModelSerializer):
    name = serializers.CharField(read_only=True, help_text="The bucket's name at the endpoint: "
                                                           "`<prefix><project slug>-<label>`.")
    label = serializers.CharField(read_only=True, help_text="The name asked for; prefixes the bucket's variables "
                                                            "when the project has several.")
    status = serializers.CharField(read_only=True, help_text="`creating`, `ready` or `deleting`")
    objects = serializers.IntegerField(source="objects_count", read_only=True,
                                       help_text="Objects at the last measure (`measuredAt`).")
    bytes = serializers.IntegerField(read_only=True, help_text="Bytes at the last measure (`measuredAt`).")

    class Meta:
        model = Bucket
        fields = ("id", "name", "label", "endpoint", "region", "status", "objects", "bytes", "measured_at",
                  "created_at")


class BucketCredentialsSerializer(serializers.Serializer):
    access_key_id = serializers.CharField()
    secret_access_key = serializers.CharField()


class BucketCreatedSerializer(BucketSerializer):
    credentials = BucketCredentialsSerializer(read_only=True, help_text="An access key that reaches only this bucket; "
                                                                  "shown only here.")

    class Meta(BucketSerializer.Meta):
        fields = (*BucketSerializer.Meta.fields, "credentials")


class BucketInput(InputSerializer):
    name = serializers.CharField(max_length=200, allow_blank=True,
                                 help_text="Lowercase letters, digits, hyphens and dots; the bucket is named "
                                           "`<project slug>-<name>` and must follow S3's naming rules.")


BucketDeleted = inline_serializer("BucketDeleted", {"deleted": serializers.BooleanField(),
                                                    "objects_deleted": serializers.IntegerField()})
FORCE = OpenApiParameter("force", {"type": "string", "enum": ["true", "false"]},
                         description="`true`: delete the bucket's objects with it (a non-empty bucket is 409 "
                                     "otherwise)")


def _force(request) -> bool:
    raw = request.query_params.get("force", "false")
    if raw not in ("true", "false"):
        raise ValidationFailed("`force` must be true or false.", details={"force": ["true or false."]})
    return raw == "true"


class BucketListView(PlatformView):
    @endpoint(scope="read", response=BucketSerializer(many=True), summary="Buckets of a project")
    def get(self, request, org_id, project_id):
        return cursor_page(request, services.buckets_list(project=self.project(project_id)), BucketSerializer)

    @endpoint(scope="admin", status=201, request=BucketInput, response=BucketCreatedSerializer, errors=(503,),
              summary="Create a bucket (its credentials are shown once)",
              description="400 names the S3 naming rule broken (`details.rule`), or S3's reason when it refuses "
                          "the name; 409 `addon_unavailable` when the platform offers no object storage or no IAM "
                          "to scope credentials with.")
    def post(self, request, org_id, project_id):
        v = validated(BucketInput, request)
        bucket, credentials = services.bucket_create(project=self.project(project_id), name=v["name"],
                                                     actor=request.user, ip=self.ip)
        bucket.credentials = credentials
        return Response(BucketCreatedSerializer(bucket).data, status=201)


class BucketDetailView(PlatformView):
    @endpoint(scope="admin", response=BucketDeleted, parameters=[FORCE], errors=(503,),
              summary="Delete a bucket (409 while it holds objects, unless ?force=true)")
    def delete(self, request, org_id, project_id, bucket_id):
        deleted = services.bucket_delete(project=self.project(project_id), bucket_id=bucket_id, force=_force(request),
                                         actor=request.user, ip=self.ip)
        return Response({"deleted": True, "objects_deleted": deleted})


P = "orgs/<str:org_id>/projects/<str:project_id>"
urlpatterns = [
    path(f"{P}/buckets", BucketListView.as_view()),
    path(f"{P}/buckets/<str:bucket_id>", BucketDetailView.as_view()),
]
