"""Rollback, deploy hooks and static sites."""
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint, field_with_schema, idempotency_key
from platform_app.api.deployments.deployments import DeploymentSerializer
from platform_app.models import DeployHook
from platform_app.services.deployments import hooks
from platform_app.services.deployments.deployments import deployment_rollback
from platform_app.services.projects.addresses import project_url
from platform_app.services.projects.selectors import projects_serving_static
from platform_app.services.deployments.selectors import deploy_hooks


class RollbackInput(InputSerializer):
    deployment_id = serializers.CharField(max_length=40, required=False)


class RollbackView(PlatformView):
    @endpoint(scope="deploy", status=201, request=RollbackInput, response=DeploymentSerializer,
              summary="Point production at an earlier ready deployment (no rebuild; 409 when there is none)")
    def post(self, request, org_id, project_id):
        data = validated(RollbackInput, request)
        target = deployment_rollback(project=self.project(project_id),
                                     deployment_id=data.get("deployment_id"), actor=request.user,
                                     ip=self.ip)
        return Response(DeploymentSerializer(target).data, status=201)


class HookSerializer(ModelSerializer):
    class Meta:
        model = DeployHook
        fields = ("id", "name", "branch", "created_at", "last_triggered_at")


class HookInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    branch = serializers.CharField(max_length=200, required=False, allow_blank=True)


class HookListView(PlatformView):
    @endpoint(scope="read", response=HookSerializer(many=True), summary="Deploy hooks (their URLs are shown once)")
    def get(self, request, org_id, project_id):
        rows = deploy_hooks(project=self.project(project_id))
        return Response({"items": HookSerializer(rows, many=True).data, "next_cursor": None})

    @endpoint(scope="admin", status=201, request=HookInput, response=HookSerializer,
              summary="Create a deploy hook; the response carries its URL, once")
    def post(self, request, org_id, project_id):
        data = validated(HookInput, request)
        hook, secret = hooks.hook_create(project=self.project(project_id), name=data["name"],
                                         branch=data.get("branch"))
        return Response({**HookSerializer(hook).data, "url": hooks.hook_url(secret)}, status=201)


class HookDetailView(PlatformView):
    @endpoint(scope="admin", response=inline_serializer("HookDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete (revoke) a deploy hook")
    def delete(self, request, org_id, project_id, hook_id):
        hooks.hook_delete(project=self.project(project_id), hook_id=hook_id)
        return Response({"deleted": True})


class HookFireView(PlatformView):
    @endpoint(public=True, request=None, response=DeploymentSerializer, errors=(402, 429),
              summary="Fire a deploy hook (the secret in the path authenticates; unknown secrets are 404)",
              description="One queued build per hook: while the hook's last build has not started, 429 with "
                          "`Retry-After` and `details.deploymentId`.")
    def post(self, request, secret):
        deployment = hooks.hook_fire(secret=secret, idempotency_key=idempotency_key(request))
        return Response(DeploymentSerializer(deployment).data)


class StaticSitesView(PlatformView):
    @endpoint(scope="read", summary="Projects whose production deployment is a static site",
              response=inline_serializer("StaticSites", {"items": serializers.ListField(child=serializers.DictField())}))
    def get(self, request, org_id):
        items = [{"project_id": p.pk, "name": p.name, "url": project_url(p),
                  "deployment_id": p.production_deployment_id, "framework": p.production_deployment.framework}
                 for p in projects_serving_static(workspace=self.workspace)]
        return Response({"items": items, "next_cursor": None})


PATH = field_with_schema({"type": "string", "maxLength": 500, "pattern": "^/"})


class RevalidateInput(InputSerializer):
    schema_extra = {"anyOf": [{"required": ["paths"], "properties": {"paths": {"minItems": 1}}},
                              {"required": ["tags"], "properties": {"tags": {"minItems": 1}}}]}
    paths = serializers.ListField(child=PATH(max_length=500), required=False, default=list,
                                  max_length=100)
    tags = serializers.ListField(child=serializers.CharField(max_length=100), required=False, default=list,
                                 max_length=100)

    def validate(self, data):
        if not data["paths"] and not data["tags"]:
            raise serializers.ValidationError({"paths": ["Send paths or tags to revalidate."]})
        if any(not p.startswith("/") for p in data["paths"]):
            raise serializers.ValidationError({"paths": ["Paths start with /."]})
        return data


class RevalidateView(PlatformView):
    @endpoint(scope="deploy", status=201, request=RevalidateInput, summary="Purge cached edge responses (ISR)",
              response=inline_serializer("Revalidated", {"purged": serializers.ListField(child=serializers.CharField()),
                                                         "deployment_id": serializers.CharField(allow_null=True)}))
    def post(self, request, org_id, project_id):
        from platform_app.services.edge.isr import revalidate

        data = validated(RevalidateInput, request)
        result = revalidate(project=self.project(project_id), paths=data["paths"],
                            tags=data["tags"])
        return Response(result, status=201)
