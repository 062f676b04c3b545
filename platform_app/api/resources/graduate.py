"""Graduation (P = /v1/orgs/{orgId}/projects/{projectId}): export a project as a signed bundle with a one-time
redeem code, and redeem one into a workspace, here or on another instance of the platform (docs/graduation.md)."""
from django.urls import path
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from platform_app.api.base import ErrorSerializer, PlatformView, endpoint
from platform_app.api.projects.projects import ProjectSerializer
from platform_app.api.resources.graduate_inputs import BUNDLE_INPUTS
from platform_app.services.resources import graduation as services

GraduationSerializer = inline_serializer("Graduation", {
    "id": serializers.CharField(),
    "redeem_code": serializers.CharField(help_text="Single use, valid until `expiresAt`; shown only here."),
    "bundle": serializers.CharField(help_text="`svcgrad1.<id>.<payload>.<signature>`: the project, signed with a "
                                              "key derived from the redeem code; its secrets sealed with another."),
    "expires_at": serializers.DateTimeField(),
})

class GraduationSecretSerializer(serializers.Serializer):
    id = serializers.CharField()
    secret = serializers.CharField()


class GraduationSecretsSerializer(serializers.Serializer):
    cron_jobs = GraduationSecretSerializer(many=True)
    log_drains = GraduationSecretSerializer(many=True)
    alert_rules = GraduationSecretSerializer(many=True)


class GraduationSkippedSerializer(serializers.Serializer):
    kind = serializers.CharField()
    name = serializers.CharField()
    reason = serializers.CharField()


RedeemedSerializer = inline_serializer("GraduationRedeemed", {
    "project": ProjectSerializer(),
    "imported": serializers.DictField(child=serializers.IntegerField(),
                                      help_text="How many of each part were made."),
    "skipped": GraduationSkippedSerializer(many=True, help_text="What this platform's state or policy refused (a "
                                                               "domain taken, an address its outbound guard "
                                                               "refuses); anything else refused refuses the bundle."),
    "secrets": GraduationSecretsSerializer(help_text="The new signing secrets of what was made; shown only here."),
})


class RedeemInput(InputSerializer):
    redeem_code = serializers.CharField(max_length=200)
    org_id = serializers.CharField(max_length=100, help_text="The workspace (id or slug) to create the project in; "
                                                             "the caller is its admin.")
    bundle = serializers.CharField(max_length=1024 * 1024, required=False, allow_blank=True,
                                   help_text="Required on another instance of the platform than the one that made "
                                             "it; optional (and must match) on that one.")


class GraduateView(PlatformView):
    @endpoint(scope="admin", status=201, response=GraduationSerializer, errors=(409,),
              summary="Export the project as a bundle with a one-time redeem code",
              description="The code is shown once; the bundle's secrets open only with it. Valid "
                          "GRADUATION_TTL_HOURS (24 by default).")
    def post(self, request, org_id, project_id):
        graduation, code = services.graduation_export(project=self.project(project_id), actor=request.user,
                                                      ip=self.ip)
        return Response({"id": graduation.pk, "redeem_code": code, "bundle": graduation.bundle,
                         "expires_at": graduation.expires_at}, status=201)


class RedeemView(PlatformView):
    @endpoint(scope="admin", status=201, request=RedeemInput, response=RedeemedSerializer, errors=(402, 404, 409),
              also={410: OpenApiResponse(ErrorSerializer, description="The redeem code has expired.")},
              summary="Redeem a graduation bundle into a workspace",
              description="404 for an unknown code (without a bundle), 409 `already_redeemed`, 410 "
                          "`graduation_expired`, 400 `bundle_invalid` for a bundle changed or made with another "
                          "code, or an item its API refuses (`details` name it: resource, index, name, fields), 402 "
                          "`plan_limit` for components past the workspace's plan. Nothing is made then.")
    def post(self, request):
        v = validated(RedeemInput, request)
        workspace = self.enter(v["org_id"], "admin").workspace
        project, report = services.graduation_redeem(workspace=workspace, code=v["redeem_code"], inputs=BUNDLE_INPUTS,
                                                     bundle=v.get("bundle") or None, actor=request.user, ip=self.ip)
        return Response({"project": ProjectSerializer(project).data, **report}, status=201)


urlpatterns = [
    path("orgs/<str:org_id>/projects/<str:project_id>/graduate", GraduateView.as_view()),
    path("graduate/redeem", RedeemView.as_view()),
]
