"""Environment variables, environments, secret findings (P = /v1/orgs/{orgId}/projects/{projectId})."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ValidationFailed
from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import Environment, EnvVar, SecretFinding
from platform_app.services.env import env as env_services
from platform_app.services.resources.managed import managed_items
from platform_app.services.env import secret_scan
from platform_app.services.env.selectors import secret_findings_open



class EnvVarSerializer(ModelSerializer):
    target = serializers.ListField(source="targets", child=serializers.CharField())
    value = serializers.SerializerMethodField()

    class Meta:
        model = EnvVar
        fields = ("id", "key", "value", "type", "target", "branch", "created_at", "updated_at")

    def get_value(self, obj) -> str | None:
        """Plain values always; secret values only when the request revealed them."""
        if obj.type == EnvVar.Type.PLAIN or self.context.get("reveal"):
            return env_services.value_of(obj)
        return None


KEY = field_with_schema({"type": "string", "maxLength": 256, "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"})


class EnvVarInput(InputSerializer):
    key = KEY(max_length=256)
    value = serializers.CharField(allow_blank=True, trim_whitespace=False)
    type = serializers.ChoiceField(choices=EnvVar.Type.choices, default="plain")
    target = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1)
    branch = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True, default=None)


class EnvVarUpdateInput(InputSerializer):
    key = KEY(max_length=256, required=False)
    value = serializers.CharField(allow_blank=True, trim_whitespace=False, required=False)
    type = serializers.ChoiceField(choices=EnvVar.Type.choices, required=False)
    target = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1, required=False)
    branch = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)


class EnvImportInput(InputSerializer):
    dotenv = serializers.CharField(trim_whitespace=False, max_length=1_000_000)
    target = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1)
    type = serializers.ChoiceField(choices=EnvVar.Type.choices, default="plain")


def _reveal_requested(request) -> bool:
    """`reveal=true` needs the `x-svc-reveal: true` header too (a second, deliberate step)."""
    if request.query_params.get("reveal", "").lower() != "true":
        return False
    if request.headers.get("x-svc-reveal", "").lower() != "true":
        raise ValidationFailed("Revealing secret values needs the header `x-svc-reveal: true` as well as reveal=true.",
                               code="reveal_header_required")
    return True


class EnvListView(PlatformView):
    @endpoint(scope="env:read", response=EnvVarSerializer(many=True), summary="List environment variables",
              parameters=[OpenApiParameter("env", str), OpenApiParameter("target", str), OpenApiParameter("branch", str),
                          OpenApiParameter("reveal", str, description="true, with the header x-svc-reveal: true"),
                          OpenApiParameter("x-svc-reveal", str, OpenApiParameter.HEADER)],
              description="Secret values are returned only with reveal=true, the header `x-svc-reveal: true` and the "
                          "`env:read` scope; every reveal is written to the audit log.")
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        reveal = _reveal_requested(request)
        target = request.query_params.get("target") or request.query_params.get("env")
        qs = env_services.env_vars_list(project=project, target=target, branch=request.query_params.get("branch"))
        if reveal:
            keys = list(qs.filter(type=EnvVar.Type.SECRET).values_list("key", flat=True))
            env_services.env_reveal_audit(project=project, keys=keys, actor=request.user, ip=self.ip)
        return cursor_page(request, qs, EnvVarSerializer, context={"reveal": reveal})

    @endpoint(scope="env:write", status=201, request=EnvVarInput, response=EnvVarSerializer,
              summary="Create an environment variable")
    def post(self, request, org_id, project_id):
        project = self.project(project_id)
        v = validated(EnvVarInput, request)
        var = env_services.env_var_create(project=project, key=v["key"], value=v["value"], type=v["type"],
                                          targets=v["target"], branch=v["branch"], actor=request.user, ip=self.ip)
        return Response(EnvVarSerializer(var).data, status=201)


class EnvDetailView(PlatformView):
    @endpoint(scope="env:write", request=EnvVarUpdateInput, response=EnvVarSerializer, summary="Update a variable")
    def patch(self, request, org_id, project_id, env_id):
        project = self.project(project_id)
        changes = validated(EnvVarUpdateInput, request)
        if "target" in changes:
            changes["targets"] = changes.pop("target")
        var = env_services.env_var_update(project=project, env_id=env_id, actor=request.user, ip=self.ip, **changes)
        return Response(EnvVarSerializer(var).data)

    @endpoint(scope="env:write", response=inline_serializer("EnvDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete a variable")
    def delete(self, request, org_id, project_id, env_id):
        env_services.env_var_delete(project=self.project(project_id), env_id=env_id, actor=request.user,
                                    ip=self.ip)
        return Response({"deleted": True})


class EnvImportView(PlatformView):
    @endpoint(scope="env:write", status=201, request=EnvImportInput, summary="Upsert a whole dotenv file",
              response=inline_serializer("EnvImportResult", {"created": serializers.IntegerField(),
                                                             "updated": serializers.IntegerField(),
                                                             "keys": serializers.ListField(child=serializers.CharField())}),
              description="One transaction: an invalid line rejects the whole file (400 with its line number).")
    def post(self, request, org_id, project_id):
        project = self.project(project_id)
        v = validated(EnvImportInput, request)
        result = env_services.env_import(project=project, dotenv=v["dotenv"], targets=v["target"], type=v["type"],
                                         actor=request.user, ip=self.ip)
        return Response(result, status=201)


class EnvResolvedView(PlatformView):
    @endpoint(scope="env:read", summary="What a deployment of this environment and branch will see",
              parameters=[OpenApiParameter("env", str), OpenApiParameter("branch", str)],
              response=inline_serializer("EnvResolved", {"env": serializers.CharField(),
                                                         "variables": serializers.ListField(),
                                                         "hash": serializers.CharField()}))
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        environment = request.query_params.get("env") or "production"
        if environment not in env_services.environment_names(project):
            raise ValidationFailed(f"Unknown environment {environment}.", code="unknown_target")
        branch = request.query_params.get("branch") or None
        pairs = env_services.env_resolve_detailed(project=project, environment=environment, branch=branch)
        managed = managed_items(project=project)  # set by the project's resources: not editable, they win
        names = {name for name, _ in managed}
        return Response({
            "env": environment, "branch": branch,
            "variables": [{"key": var.key, "type": var.type, "source": source, "id": var.pk,
                           "value": env_services.value_of(var) if var.type == "plain" else None}
                          for var, source in pairs if var.key not in names]
                         + [{"key": name, "type": "secret", "source": "managed", "managed_by": item.source, "id": None,
                             "value": None} for name, item in managed],
            "hash": env_services.env_snapshot(project=project, environment=environment, branch=branch)["hash"],
        })


# Environments -------------------------------------------------------------------------------

class EnvironmentSerializer(ModelSerializer):
    class Meta:
        model = Environment
        fields = ("id", "name", "branch_pattern", "builtin", "created_at")


ENVIRONMENT_NAME = field_with_schema({"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$"})


class EnvironmentInput(InputSerializer):
    name = ENVIRONMENT_NAME(max_length=64)
    branch_pattern = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class EnvironmentUpdateInput(InputSerializer):
    name = ENVIRONMENT_NAME(max_length=64, required=False)
    branch_pattern = serializers.CharField(max_length=200, required=False, allow_blank=True)


class EnvironmentListView(PlatformView):
    @endpoint(scope="read", response=EnvironmentSerializer(many=True), summary="Environments of a project")
    def get(self, request, org_id, project_id):
        rows = env_services.environments_for(self.project(project_id))
        return Response({"items": EnvironmentSerializer(rows, many=True).data, "next_cursor": None})

    @endpoint(scope="env:write", status=201, request=EnvironmentInput, response=EnvironmentSerializer,
              summary="Add a custom environment")
    def post(self, request, org_id, project_id):
        data = validated(EnvironmentInput, request)
        env = env_services.environment_create(project=self.project(project_id), **data)
        return Response(EnvironmentSerializer(env).data, status=201)


class EnvironmentDetailView(PlatformView):
    @endpoint(scope="env:write", request=EnvironmentUpdateInput, response=EnvironmentSerializer,
              summary="Rename a custom environment or change its branch pattern")
    def patch(self, request, org_id, project_id, environment_id):
        data = validated(EnvironmentUpdateInput, request)
        env = env_services.environment_update(project=self.project(project_id), environment_id=environment_id,
                                              name=data.get("name"),
                                              branch_pattern=data.get("branch_pattern"))
        return Response(EnvironmentSerializer(env).data)

    @endpoint(scope="env:write", response=inline_serializer("EnvironmentDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete a custom environment (the built-ins stay)")
    def delete(self, request, org_id, project_id, environment_id):
        env_services.environment_delete(project=self.project(project_id), environment_id=environment_id)
        return Response({"deleted": True})


# Secret findings ----------------------------------------------------------------------------

class SecretFindingSerializer(ModelSerializer):
    status = serializers.SerializerMethodField()

    class Meta:
        model = SecretFinding
        fields = ("id", "rule", "file", "line", "preview", "commit_sha", "deployment_id", "first_seen_at",
                  "last_seen_at", "status", "imported_as")

    def get_status(self, obj) -> str:
        return "ignored" if obj.ignored_at else "imported" if obj.imported_at else "open"


class FindingImportInput(InputSerializer):
    key = serializers.CharField(max_length=256)
    target = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1, required=False,
                                   help_text="Default: every built-in environment.")


class SecretFindingListView(PlatformView):
    @endpoint(scope="read", response=SecretFindingSerializer(many=True), summary="Committed secrets found by builds")
    def get(self, request, org_id, project_id):
        qs = secret_findings_open(project=self.project(project_id))
        return cursor_page(request, qs, SecretFindingSerializer, order_field="last_seen_at")


class SecretFindingImportView(PlatformView):
    @endpoint(scope="env:write", status=201, request=FindingImportInput, response=SecretFindingSerializer,
              summary="Move a finding's value into a secret env var")
    def post(self, request, org_id, project_id, finding_id):
        data = validated(FindingImportInput, request)
        finding, _ = secret_scan.finding_import(project=self.project(project_id), finding_id=finding_id,
                                                key=data["key"], targets=data.get("target"),
                                                actor=request.user, ip=self.ip)
        return Response(SecretFindingSerializer(finding).data, status=201)


class SecretFindingDetailView(PlatformView):
    @endpoint(scope="env:write", response=SecretFindingSerializer, summary="Ignore a finding (it will not come back)")
    def delete(self, request, org_id, project_id, finding_id):
        finding = secret_scan.finding_ignore(project=self.project(project_id), finding_id=finding_id)
        return Response(SecretFindingSerializer(finding).data)
