"""Components, their volumes, and instance sizes (docs/resources.md):
`GET/POST P/components`, `PATCH/DELETE P/components/{componentId}`, `POST P/components/{componentId}/deploy`,
`GET/POST P/components/{componentId}/volumes`, `DELETE P/components/{componentId}/volumes/{volumeId}`,
`GET /v1/instance-sizes`."""
from django.urls import path
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint, field_with_schema, idempotency_key
from platform_app.api.deployments.deployments import DeploymentSerializer
from platform_app.models import Component, Instance, Volume
from platform_app.services.projects.addresses import component_url
from platform_app.services.resources import components as services

P = "orgs/<str:org_id>/projects/<str:project_id>"
KIND = field_with_schema({"type": "string", "enum": list(Component.Kind.values)})
PATH = field_with_schema({"type": "string", "pattern": "^(/.*)?$", "maxLength": 200})


class ComponentSerializer(ModelSerializer):
    status = serializers.SerializerMethodField(help_text="idle, stopped, deploying, running, crashed")
    deployment_id = serializers.CharField(allow_null=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Component
        fields = ("id", "name", "kind", "start_command", "build_command", "instance_size", "instances",
                  "health_check_path", "status", "deployment_id", "url", "created_at")

    def get_status(self, obj) -> str:
        return services.component_status(obj, self.context.get("instances", {}).get(obj.pk))

    def get_url(self, obj) -> str | None:
        return component_url(obj) if obj.kind != Component.Kind.WORKER else None


class VolumeSerializer(ModelSerializer):
    node_id = serializers.CharField(allow_null=True)

    class Meta:
        model = Volume
        fields = ("id", "name", "mount_path", "size_gb", "used_bytes", "node_id", "created_at")


class ComponentCreateInput(InputSerializer):
    name = serializers.CharField(max_length=30)
    kind = KIND(max_length=16)
    start_command = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")
    build_command = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")
    instance_size = serializers.CharField(max_length=32, required=False, default="starter")
    instances = serializers.IntegerField(min_value=0, max_value=services.MAX_INSTANCES, required=False, default=1)
    health_check_path = PATH(max_length=200, required=False, allow_blank=True, allow_null=True, default=None)


class ComponentUpdateInput(InputSerializer):
    start_command = serializers.CharField(max_length=1000, required=False, allow_blank=True)
    build_command = serializers.CharField(max_length=1000, required=False, allow_blank=True)
    instance_size = serializers.CharField(max_length=32, required=False)
    instances = serializers.IntegerField(min_value=0, max_value=services.MAX_INSTANCES, required=False)
    health_check_path = PATH(max_length=200, required=False, allow_blank=True)


class VolumeCreateInput(InputSerializer):
    name = serializers.CharField(max_length=30)
    mount_path = serializers.CharField(max_length=200)
    size_gb = serializers.IntegerField(min_value=1, max_value=10_000)


def _instances(components) -> dict:
    by_component: dict = {}
    for instance in Instance.objects.filter(component__in=components):
        by_component.setdefault(instance.component_id, []).append(instance)
    return {c.pk: by_component.get(c.pk, []) for c in components}


class ComponentListView(PlatformView):
    @endpoint(scope="read", response=ComponentSerializer(many=True), summary="The project's components")
    def get(self, request, org_id, project_id):
        rows = services.components_list(project=self.project(project_id))
        data = ComponentSerializer(rows, many=True, context={"instances": _instances(rows)}).data
        return Response({"items": data, "next_cursor": None})

    @endpoint(scope="admin", status=201, request=ComponentCreateInput, response=ComponentSerializer, errors=(402, 409),
              summary="Add a component (402 plan_limit: more instances than the workspace's plan runs)")
    def post(self, request, org_id, project_id):
        data = validated(ComponentCreateInput, request)
        component = services.component_create(project=self.project(project_id), actor=request.user, ip=self.ip,
                                              **data)
        return Response(ComponentSerializer(component).data, status=201)


class ComponentDetailView(PlatformView):
    @endpoint(scope="admin", request=ComponentUpdateInput, response=ComponentSerializer, errors=(402, 409),
              summary="Change a component: its command, size, instances (rolled out by placement)")
    def patch(self, request, org_id, project_id, component_id):
        data = validated(ComponentUpdateInput, request)
        component = services.component_update(project=self.project(project_id), component_id=component_id,
                                              actor=request.user, ip=self.ip, **data)
        return Response(ComponentSerializer(component).data)

    @endpoint(scope="admin", response=ComponentSerializer, summary="Delete a component, its instances and volumes")
    def delete(self, request, org_id, project_id, component_id):
        component = services.component_delete(project=self.project(project_id), component_id=component_id,
                                              actor=request.user, ip=self.ip)
        return Response(ComponentSerializer(component, context={"instances": {component.pk: []}}).data)


class ComponentDeployView(PlatformView):
    @endpoint(scope="deploy", status=201, request=None, response=DeploymentSerializer, errors=(402,),
              summary="Build and roll out the component (its instances are replaced once the new ones are healthy)")
    def post(self, request, org_id, project_id, component_id):
        deployment = services.component_deploy(project=self.project(project_id), component_id=component_id,
                                               actor=request.user, ip=self.ip,
                                               idempotency_key=idempotency_key(request))
        return Response(DeploymentSerializer(deployment).data, status=201)


class VolumeListView(PlatformView):
    @endpoint(scope="read", response=VolumeSerializer(many=True), summary="The component's volumes")
    def get(self, request, org_id, project_id, component_id):
        component = services.component_get(project=self.project(project_id), component_id=component_id)
        return Response({"items": VolumeSerializer(services.volumes_list(component=component), many=True).data,
                         "next_cursor": None})

    @endpoint(scope="admin", status=201, request=VolumeCreateInput, response=VolumeSerializer, errors=(409,),
              summary="Add a volume: a folder on the component's node, mounted at `mountPath`")
    def post(self, request, org_id, project_id, component_id):
        data = validated(VolumeCreateInput, request)
        volume = services.volume_create(project=self.project(project_id), component_id=component_id,
                                        actor=request.user, ip=self.ip, **data)
        return Response(VolumeSerializer(volume).data, status=201)


class VolumeDetailView(PlatformView):
    @endpoint(scope="admin", response=VolumeSerializer, errors=(409,),
              summary="Delete a volume (409 while its component runs)")
    def delete(self, request, org_id, project_id, component_id, volume_id):
        volume = services.volume_delete(project=self.project(project_id), component_id=component_id,
                                        volume_id=volume_id, actor=request.user, ip=self.ip)
        return Response(VolumeSerializer(volume).data)


class InstanceSizesView(PlatformView):
    @endpoint(scope="read", summary="The instance sizes a component can have",
              response=inline_serializer("InstanceSizes", {"items": serializers.ListField()}))
    def get(self, request):
        return Response({"items": services.instance_sizes(), "next_cursor": None})


urlpatterns = [
    path(f"{P}/components", ComponentListView.as_view()),
    path(f"{P}/components/<str:component_id>", ComponentDetailView.as_view()),
    path(f"{P}/components/<str:component_id>/deploy", ComponentDeployView.as_view()),
    path(f"{P}/components/<str:component_id>/volumes", VolumeListView.as_view()),
    path(f"{P}/components/<str:component_id>/volumes/<str:volume_id>", VolumeDetailView.as_view()),
    path("instance-sizes", InstanceSizesView.as_view()),
]
