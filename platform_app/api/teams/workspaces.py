"""Workspaces: list yours, create, get, rename."""
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import Forbidden
from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, endpoint
from platform_app.api.identity.serializers import WorkspaceSerializer, WorkspaceWithRoleSerializer
from platform_app.services.teams.workspaces import workspace_create, workspace_update, workspaces_of


class WorkspaceCreateInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    slug = serializers.SlugField(max_length=48, required=False)


class WorkspaceUpdateInput(InputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    slug = serializers.SlugField(max_length=48, required=False)


class WorkspaceDetailSerializer(WorkspaceSerializer):
    role = serializers.SerializerMethodField()

    class Meta(WorkspaceSerializer.Meta):
        fields = WorkspaceSerializer.Meta.fields + ("role",)

    def get_role(self, obj) -> str | None:
        membership = self.context.get("membership")
        return membership.role if membership else None


class WorkspaceListView(PlatformView):
    @endpoint(scope="read", response=WorkspaceWithRoleSerializer(many=True), summary="Your workspaces")
    def get(self, request):
        memberships = workspaces_of(request.user)
        if self.actor and self.actor.workspace_id:
            memberships = memberships.filter(workspace_id=self.actor.workspace_id)
        return Response({"items": WorkspaceWithRoleSerializer(memberships, many=True).data, "next_cursor": None})

    @endpoint(scope="admin", status=201, request=WorkspaceCreateInput, response=WorkspaceDetailSerializer,
              summary="Create a workspace (you become its owner)")
    def post(self, request):
        data = validated(WorkspaceCreateInput, request)
        if self.actor and self.actor.workspace_id:
            raise Forbidden("A token bound to one workspace cannot create workspaces.")
        ws = workspace_create(user=request.user, ip=self.ip, **data)
        return Response(WorkspaceDetailSerializer(ws, context={"membership": ws.memberships.get()}).data, status=201)


class WorkspaceDetailView(PlatformView):
    @endpoint(scope="read", response=WorkspaceDetailSerializer, summary="One workspace (by id or slug)")
    def get(self, request, org_id):
        return Response(WorkspaceDetailSerializer(self.workspace, context={"membership": self.membership}).data)

    @endpoint(scope="admin", request=WorkspaceUpdateInput, response=WorkspaceDetailSerializer,
              summary="Update a workspace (name, slug)")
    def patch(self, request, org_id):
        ws = workspace_update(workspace=self.workspace, actor=request.user, ip=self.ip,
                              **validated(WorkspaceUpdateInput, request))
        return Response(WorkspaceDetailSerializer(ws, context={"membership": self.membership}).data)
