"""Preview protection settings, and the visitor's verify/check."""
from django.conf import settings
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from config.parsers import CamelCaseJSONParser
from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, endpoint
from platform_app.models import PreviewProtection
from platform_app.services.edge import preview
from platform_app.services.projects.selectors import project_by_id

ProtectionSerializer = inline_serializer("PreviewProtection", {
    "mode": serializers.CharField(), "password_set": serializers.BooleanField(), "updated_at": serializers.DateTimeField()})


def _body(protection) -> dict:
    return {"mode": protection.mode, "password_set": bool(protection.password_hash), "updated_at": protection.updated_at}


class ProtectionInput(InputSerializer):
    mode = serializers.ChoiceField(choices=PreviewProtection.Mode.choices)
    password = serializers.CharField(max_length=256, required=False, allow_blank=True, trim_whitespace=False)


class PreviewPasswordInput(InputSerializer):
    password = serializers.CharField(max_length=256, trim_whitespace=False)


class PreviewProtectionView(PlatformView):
    @endpoint(scope="read", response=ProtectionSerializer, summary="Preview protection of a project")
    def get(self, request, org_id, project_id):
        return Response(_body(preview.protection_of(self.project(project_id))))

    @endpoint(scope="admin", request=ProtectionInput, response=ProtectionSerializer,
              summary="Set preview protection: off, password, or workspace members only")
    def put(self, request, org_id, project_id):
        data = validated(ProtectionInput, request)
        protection = preview.protection_set(project=self.project(project_id), mode=data["mode"],
                                            password=data.get("password"), actor=request.user)
        return Response(_body(protection))


class PreviewVerifyView(PlatformView):
    parser_classes = [CamelCaseJSONParser, FormParser]

    @endpoint(public=True, status=201, request=PreviewPasswordInput, errors=(429,), summary="Enter a preview password",
              response=inline_serializer("PreviewVerified", {"allowed": serializers.BooleanField()}),
              description="Sets a signed cookie scoped to the project. Wrong passwords are 401 and counted (429 past the limit).")
    def post(self, request, project_id):
        project = project_by_id(project_id)
        data = validated(PreviewPasswordInput, request)
        value = preview.preview_verify(project=project, password=data["password"], ip=self.ip)
        response = Response({"allowed": True}, status=201)
        response.set_cookie(preview.cookie_name(project), value, max_age=settings.PREVIEW_COOKIE_MAX_AGE,
                            httponly=True, samesite="Lax", secure=not settings.DEBUG)
        return response


class PreviewCheckView(PlatformView):
    @endpoint(public=True, summary="May the caller view this project's previews?",
              response=inline_serializer("PreviewCheck", {"allowed": serializers.BooleanField(),
                                                          "mode": serializers.CharField(),
                                                          "reason": serializers.CharField()}))
    def get(self, request, project_id):
        project = project_by_id(project_id)
        allowed, reason = preview.preview_allowed(request, project)
        return Response({"allowed": allowed, "mode": preview.protection_of(project).mode, "reason": reason})
