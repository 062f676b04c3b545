"""Add-ons: `GET/POST P/addons`, `DELETE P/addons/{addonId}` (docs/resources.md)."""
from django.urls import path
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint, field_with_schema
from platform_app.models import Addon
from platform_app.services.resources import addons as services

P = "orgs/<str:org_id>/projects/<str:project_id>"


class AddonSerializer(ModelSerializer):
    env_vars = serializers.SerializerMethodField(help_text="names of the managed variables it sets")

    class Meta:
        model = Addon
        fields = ("id", "kind", "name", "status", "error_message", "env_vars", "created_at")

    def get_env_vars(self, obj) -> list[str]:
        return services.addon_env_names(obj)


class AddonCreateInput(InputSerializer):
    kind = field_with_schema({"type": "string", "enum": sorted(services.KINDS)})(max_length=32)
    name = serializers.CharField(max_length=40, required=False,
                                 help_text="prefixes its variables when the project has several; default: the kind")


class AddonListView(PlatformView):
    @endpoint(scope="read", response=AddonSerializer(many=True), summary="The project's add-ons")
    def get(self, request, org_id, project_id):
        rows = services.addons_list(project=self.project(project_id))
        return Response({"items": AddonSerializer(rows, many=True).data, "next_cursor": None})

    @endpoint(scope="admin", status=201, request=AddonCreateInput, response=AddonSerializer, errors=(409,),
              summary="Provision an add-on: `provisioning` until a task has made it (409 addon_unavailable when this "
                      "platform does not offer it)")
    def post(self, request, org_id, project_id):
        data = validated(AddonCreateInput, request)
        addon = services.addon_create(project=self.project(project_id), actor=request.user, ip=self.ip, **data)
        return Response(AddonSerializer(addon).data, status=201)


class AddonDetailView(PlatformView):
    @endpoint(scope="admin", response=AddonSerializer, summary="Delete an add-on: its variables go at once, its "
                                                                "data after the grace period")
    def delete(self, request, org_id, project_id, addon_id):
        addon = services.addon_delete(project=self.project(project_id), addon_id=addon_id, actor=request.user,
                                      ip=self.ip)
        return Response(AddonSerializer(addon).data)


urlpatterns = [
    path(f"{P}/addons", AddonListView.as_view()),
    path(f"{P}/addons/<str:addon_id>", AddonDetailView.as_view()),
]
