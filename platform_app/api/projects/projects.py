"""Projects, project groups and starter templates."""
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import Project, ProjectGroup
from platform_app.services.projects.addresses import project_url
from platform_app.services.projects import project_groups as group_services
from platform_app.services.projects import projects as project_services
from platform_app.services.providers.git_urls import public_git_url
from platform_app.services.projects.templates import templates_list
from platform_app.services.projects.selectors import project_groups_in, projects_in


# Serializers -----------------------------------------------------------------------

class ProjectSerializer(ModelSerializer):
    org_id = serializers.CharField(source="workspace_id")
    group_id = serializers.CharField(allow_null=True)
    production_deployment_id = serializers.CharField(allow_null=True)
    git_url = serializers.SerializerMethodField(
        help_text="The repository URL the project was created from; null for template projects (their "
                  "repository is hosted by the platform, see `template`) and for provider projects (see "
                  "`gitProvider`, `gitRepo`)")
    url = serializers.SerializerMethodField()
    registry_credentials_set = serializers.SerializerMethodField(
        help_text="Whether the image project has registry credentials (PUT P/registry-credentials); they are "
                  "never answered")

    class Meta:
        model = Project
        fields = ("id", "org_id", "name", "slug", "source", "git_url", "git_provider", "git_repo", "image_ref",
                  "template", "framework", "install_command", "build_command", "output_directory", "start_command",
                  "root_directory", "production_branch", "auto_deploy", "group_id", "production_deployment_id",
                  "url", "registry_credentials_set", "created_at", "updated_at")

    def get_registry_credentials_set(self, obj) -> bool:
        return bool(obj.registry_credentials_encrypted)

    def get_git_url(self, obj) -> str | None:
        return public_git_url(obj)

    def get_url(self, obj) -> str:
        return project_url(obj)


class BuildSettingsInput(InputSerializer):
    framework = serializers.CharField(max_length=32, required=False, allow_blank=True)
    install_command = serializers.CharField(max_length=500, required=False, allow_blank=True)
    build_command = serializers.CharField(max_length=500, required=False, allow_blank=True)
    output_directory = serializers.CharField(max_length=200, required=False, allow_blank=True)
    start_command = serializers.CharField(max_length=500, required=False, allow_blank=True)
    root_directory = serializers.CharField(max_length=200, required=False, allow_blank=True)


class ProjectCreateInput(BuildSettingsInput):
    name = serializers.CharField(max_length=100)
    slug = serializers.CharField(max_length=63, required=False)
    source = serializers.ChoiceField(choices=["git", "upload"], default="git",
                                     help_text="`upload`: built from folders sent to `P/sources` (`svc deploy`)")
    git_url = serializers.CharField(max_length=500, required=False, allow_blank=True,
                                    help_text="An https URL of a Git repository (http where the platform "
                                              "allows it); never a path or file:// URL")
    provider = serializers.ChoiceField(choices=["git-a", "git-b", "git-c"], required=False)
    repo = serializers.CharField(max_length=200, required=False, help_text="owner/name at the provider")
    production_branch = serializers.CharField(max_length=200, required=False,
                                              help_text="Default: the repository's default branch")
    auto_deploy = serializers.BooleanField(required=False)
    group_id = serializers.CharField(required=False, allow_null=True)


class ProjectFromImageInput(BuildSettingsInput):
    name = serializers.CharField(max_length=100)
    slug = serializers.CharField(max_length=63, required=False)
    image_ref = serializers.CharField(max_length=300)
    group_id = serializers.CharField(required=False, allow_null=True)


class ProjectFromTemplateInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    slug = serializers.CharField(max_length=63, required=False)
    template = serializers.CharField(max_length=64)
    group_id = serializers.CharField(required=False, allow_null=True)


class ProjectUpdateInput(BuildSettingsInput):
    name = serializers.CharField(max_length=100, required=False)
    production_branch = serializers.CharField(max_length=200, required=False)
    auto_deploy = serializers.BooleanField(required=False)
    group_id = serializers.CharField(required=False, allow_null=True)


class AutoDeployRuleSerializer(serializers.Serializer):
    branch = serializers.CharField()
    env = serializers.CharField()


class AutoDeployStatusSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="not_git_repository | auto_deploy_disabled | null")
    message = serializers.CharField()
    auto_deploy = serializers.BooleanField()
    production_branch = serializers.CharField()
    source = serializers.CharField()
    rules = serializers.JSONField()


class ProjectGroupSerializer(ModelSerializer):
    org_id = serializers.CharField(source="workspace_id")
    project_count = serializers.SerializerMethodField()

    class Meta:
        model = ProjectGroup
        fields = ("id", "org_id", "name", "slug", "project_count", "created_at")

    def get_project_count(self, obj) -> int:
        return obj.projects.count()


class ProjectGroupDetailSerializer(ProjectGroupSerializer):
    projects = ProjectSerializer(many=True)

    class Meta(ProjectGroupSerializer.Meta):
        fields = ProjectGroupSerializer.Meta.fields + ("projects",)


class ProjectGroupCreateInput(InputSerializer):
    # the slug comes from `slug`, else from `name` (slugified): one of them needs a letter or digit
    schema_extra = {"anyOf": [{"required": ["slug"]}, {"properties": {"name": {"pattern": "[A-Za-z0-9]"}}}]}
    name = serializers.CharField(max_length=100)
    slug = field_with_schema({"type": "string", "maxLength": 64, "pattern": "^[-_]*[A-Za-z0-9][-A-Za-z0-9_]*$"},
                             base=serializers.SlugField)(max_length=64, required=False)


class TemplateSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    framework = serializers.CharField()
    runtime = serializers.CharField()
    build_command = serializers.CharField()
    start_command = serializers.CharField()
    output_directory = serializers.CharField()



# Projects --------------------------------------------------------------------------

class ProjectListView(PlatformView):
    @endpoint(scope="read", response=ProjectSerializer(many=True), summary="Projects of the workspace", kept=True)
    def get(self, request, org_id):
        qs = projects_in(workspace=self.workspace, group_id=request.query_params.get("groupId"))
        return cursor_page(request, qs, ProjectSerializer)

    @endpoint(scope="admin", status=201, request=ProjectCreateInput, response=ProjectSerializer,
              summary="Create a project from a Git repository",
              description="`gitUrl` (https; checked by the outbound guard and `git ls-remote`: refused or "
                          "unreadable → 400 `git_unreachable` with one generic message, nothing created) or "
                          "`provider` + `repo` through a Git provider connection.")
    def post(self, request, org_id):
        values = validated(ProjectCreateInput, request)
        create = (project_services.project_create_for_uploads if values.pop("source") == "upload"
                  else project_services.project_create_from_git)
        project = create(workspace=self.workspace, actor=request.user, ip=self.ip, **values)
        return Response(ProjectSerializer(project).data, status=201)


class ProjectFromImageView(PlatformView):
    @endpoint(scope="admin", status=201, request=ProjectFromImageInput, response=ProjectSerializer,
              summary="Create a project that runs a container image")
    def post(self, request, org_id):
        values = validated(ProjectFromImageInput, request)
        project = project_services.project_create_from_image(workspace=self.workspace, actor=request.user,
                                                             ip=self.ip, **values)
        return Response(ProjectSerializer(project).data, status=201)


class ProjectFromTemplateView(PlatformView):
    @endpoint(scope="admin", status=201, request=ProjectFromTemplateInput, response=ProjectSerializer,
              summary="Create a project from a starter template (hosted Git repository)")
    def post(self, request, org_id):
        values = validated(ProjectFromTemplateInput, request)
        project = project_services.project_create_from_template(workspace=self.workspace, actor=request.user,
                                                                ip=self.ip, **values)
        return Response(ProjectSerializer(project).data, status=201)


class ProjectDetailView(PlatformView):
    @endpoint(scope="read", response=ProjectSerializer, summary="One project (by id or slug)", kept=True)
    def get(self, request, org_id, project_id):
        return Response(ProjectSerializer(project_services.project_get(workspace=self.workspace,
                                                                       project_id=project_id)).data)

    @endpoint(scope="admin", request=ProjectUpdateInput, response=ProjectSerializer,
              summary="Update name, build settings, production branch, auto-deploy, group")
    def patch(self, request, org_id, project_id):
        project = project_services.project_get(workspace=self.workspace, project_id=project_id)
        values = validated(ProjectUpdateInput, request)
        project = project_services.project_update(project=project, actor=request.user, ip=self.ip, **values)
        return Response(ProjectSerializer(project).data)

    @endpoint(scope="admin", response=ProjectSerializer, summary="Delete a project and its resources")
    def delete(self, request, org_id, project_id):
        project = project_services.project_get(workspace=self.workspace, project_id=project_id)
        data = ProjectSerializer(project).data
        project_services.project_delete(project=project, actor=request.user, ip=self.ip)
        return Response(data)


class ProjectAutoDeployStatusView(PlatformView):
    @endpoint(scope="read", response=AutoDeployStatusSerializer, summary="Which pushes deploy, or why none do")
    def get(self, request, org_id, project_id):
        project = project_services.project_get(workspace=self.workspace, project_id=project_id)
        return Response(AutoDeployStatusSerializer(project_services.project_auto_deploy_status(project=project)).data)


# Groups ----------------------------------------------------------------------------

class ProjectGroupListView(PlatformView):
    @endpoint(scope="read", response=ProjectGroupSerializer(many=True), summary="Project groups")
    def get(self, request, org_id):
        return cursor_page(request, project_groups_in(workspace=self.workspace), ProjectGroupSerializer)

    @endpoint(scope="admin", status=201, request=ProjectGroupCreateInput, response=ProjectGroupSerializer,
              summary="Create a project group")
    def post(self, request, org_id):
        values = validated(ProjectGroupCreateInput, request)
        group = group_services.project_group_create(workspace=self.workspace, actor=request.user, ip=self.ip,
                                                    **values)
        return Response(ProjectGroupSerializer(group).data, status=201)


class ProjectGroupBySlugView(PlatformView):
    @endpoint(scope="read", response=ProjectGroupDetailSerializer, summary="A project group with its projects")
    def get(self, request, org_id, slug):
        group = group_services.project_group_get(workspace=self.workspace, ref=slug)
        return Response(ProjectGroupDetailSerializer(group).data)

    @endpoint(scope="admin", response=ProjectGroupSerializer, summary="Delete a group (its projects stay)")
    def delete(self, request, org_id, slug):
        group = group_services.project_group_get(workspace=self.workspace, ref=slug)
        data = ProjectGroupSerializer(group).data
        group_services.project_group_delete(group=group, actor=request.user, ip=self.ip)
        return Response(data)


# Templates -------------------------------------------------------------------------

class TemplateListView(PlatformView):
    @endpoint(scope="read", response=TemplateSerializer(many=True), summary="Starter templates")
    def get(self, request):
        items = templates_list()
        return Response({"items": TemplateSerializer(items, many=True).data, "next_cursor": None})
