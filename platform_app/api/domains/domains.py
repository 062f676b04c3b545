"""Custom domains (P = /v1/orgs/{orgId}/projects/{projectId}) and the platform's verification targets."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint
from platform_app.models import Domain
from platform_app.models.domains import RecordType
from platform_app.services.domains import domains as services


class VerificationRecordSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=RecordType.choices)
    name = serializers.CharField()
    value = serializers.CharField()


class FoundRecordSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=RecordType.choices)
    value = serializers.CharField()


class LastCheckSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    found = FoundRecordSerializer(many=True)
    error = serializers.CharField(required=False, help_text="present when a resolver failed to answer")


class DomainSerializer(ModelSerializer):
    project_id = serializers.CharField(source="project.pk", read_only=True)
    verified = serializers.BooleanField(read_only=True, help_text="status is verified: the edge serves it")
    redirect_to = serializers.SerializerMethodField()
    git_branch = serializers.SerializerMethodField()
    verification = serializers.SerializerMethodField()
    last_check = serializers.SerializerMethodField()

    class Meta:
        model = Domain
        fields = ("id", "name", "project_id", "status", "verified", "primary", "redirect_to", "git_branch",
                  "verification", "last_check", "status_changed_at", "created_at")
        read_only_fields = fields

    def get_redirect_to(self, obj) -> str | None:
        return obj.redirect_to or None

    def get_git_branch(self, obj) -> str | None:
        return obj.git_branch or None

    def get_verification(self, obj) -> VerificationRecordSerializer(many=True):
        """Create any one of these records to verify the domain."""
        return services.domain_verification(obj)

    def get_last_check(self, obj) -> LastCheckSerializer(allow_null=True):
        check = services.domain_last_check(obj)
        return LastCheckSerializer(check).data if check else None


class DomainInput(InputSerializer):
    name = serializers.CharField(max_length=300, help_text="a host name; international names are stored as "
                                                           "punycode")
    redirect_to = serializers.CharField(max_length=300, required=False, allow_null=True, allow_blank=True,
                                        help_text="another domain of this project: answer 308 there")
    git_branch = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True,
                                       help_text="serve the latest ready deployment of this branch")


class DomainUpdateInput(InputSerializer):
    redirect_to = serializers.CharField(max_length=300, required=False, allow_null=True, allow_blank=True)
    git_branch = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)


DOMAIN_ERRORS = (409,)


class DomainListView(PlatformView):
    @endpoint(scope="read", response=DomainSerializer(many=True), summary="Domains of a project")
    def get(self, request, org_id, project_id):
        return cursor_page(request, services.domains_of_project(self.project(project_id)), DomainSerializer)

    @endpoint(scope="domains", status=201, request=DomainInput, response=DomainSerializer, errors=DOMAIN_ERRORS,
              summary="Add a domain",
              description="The domain starts `pending`; its `verification` lists the DNS records that verify it. "
                          "400 when it is not a host name or is the platform's own domain (or under it), 409 "
                          "`domain_taken` when a project already has it.")
    def post(self, request, org_id, project_id):
        v = validated(DomainInput, request)
        domain = services.domain_add(project=self.project(project_id), name=v["name"],
                                     redirect_to=v.get("redirect_to"), git_branch=v.get("git_branch"),
                                     actor=request.user, ip=self.ip)
        return Response(DomainSerializer(domain).data, status=201)


class DomainDetailView(PlatformView):
    @endpoint(scope="domains", request=DomainUpdateInput, response=DomainSerializer,
              summary="Change a domain's redirect or branch")
    def patch(self, request, org_id, project_id, domain_id):
        v = validated(DomainUpdateInput, request)
        domain = services.domain_update(project=self.project(project_id), domain_id=domain_id, actor=request.user,
                                        ip=self.ip, **v)
        return Response(DomainSerializer(domain).data)

    @endpoint(scope="domains", response=inline_serializer("DomainRemoved", {"deleted": serializers.BooleanField()}),
              summary="Remove a domain")
    def delete(self, request, org_id, project_id, domain_id):
        services.domain_remove(project=self.project(project_id), domain_id=domain_id, actor=request.user,
                               ip=self.ip)
        return Response({"deleted": True})


class DomainVerifyView(PlatformView):
    @endpoint(scope="domains", status=201, response=DomainSerializer, summary="Check a domain's DNS now",
              description="201 whatever was found: `lastCheck.found` says what DNS answered, `verification` "
                          "what would verify it, `status` the outcome.")
    def post(self, request, org_id, project_id, domain_id):
        domain = services.domain_verify(project=self.project(project_id), domain_id=domain_id, actor=request.user,
                                        ip=self.ip)
        return Response(DomainSerializer(domain).data, status=201)


class DomainPrimaryView(PlatformView):
    @endpoint(scope="domains", status=201, response=DomainSerializer, errors=DOMAIN_ERRORS,
              summary="Make a verified domain the project's primary",
              description="The project's other domains (without a redirect or branch of their own) answer 308 to "
                          "it, path and query kept. 409 `domain_not_verified` before verification.")
    def post(self, request, org_id, project_id, domain_id):
        domain = services.domain_set_primary(project=self.project(project_id), domain_id=domain_id,
                                             actor=request.user, ip=self.ip)
        return Response(DomainSerializer(domain).data, status=201)


class WorkspaceDomainListView(PlatformView):
    @endpoint(scope="read", response=DomainSerializer(many=True), summary="Every domain of the workspace",
              parameters=[OpenApiParameter("status", {"type": "string", "enum": list(Domain.Status.values)},
                                           description="only domains in this status")])
    def get(self, request, org_id):
        return cursor_page(request, services.domains_of_workspace(self.workspace,
                                                                  status=request.query_params.get("status")),
                           DomainSerializer)


class VerificationTargetsView(PlatformView):
    @endpoint(scope="read", summary="What a domain's DNS may point at",
              response=inline_serializer("VerificationTargets", {
                  "txt_prefix": serializers.CharField(help_text="TXT record `_<txtPrefix>-challenge.<domain>`"),
                  "cname": serializers.CharField(),
                  "a": serializers.ListField(child=serializers.CharField()),
                  "aaaa": serializers.ListField(child=serializers.CharField())}))
    def get(self, request):
        return Response(services.verification_targets())
