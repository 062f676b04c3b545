"""Staff reports (`/v1/admin/...`): objects for reports, `{"items","nextCursor"}` for lists. The same selectors
feed the Django admin's overview page (platform_app/admin/staff.py)."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import query_int
from config.serializers import ModelSerializer
from platform_app.api.base import PAGE_PARAMETERS, cursor_page, endpoint
from platform_app.api.staff.base import StaffView
from platform_app.api.billing.billing import InvoiceSerializer
from platform_app.models import AgentNode, AuditEvent, Deployment, Membership, Project, UsageRecord, User, Workspace
from platform_app.services.billing.selectors import invoices_all, revenue_by_month, usage_records_all
from platform_app.services.staff import selectors

MAX_DAYS = 90


def _dict_field():
    return serializers.DictField(child=serializers.JSONField())


OverviewSerializer = inline_serializer("AdminOverview", {
    "users": serializers.IntegerField(), "workspaces": serializers.IntegerField(),
    "projects": serializers.IntegerField(), "deployments_today": serializers.IntegerField(),
    "deployments_this_week": serializers.IntegerField(help_text="since Monday 00:00 UTC"),
    "build_failure_rate": serializers.FloatField(allow_null=True,
                                                 help_text="% of builds finished in the window that failed"),
    "builds_finished": serializers.IntegerField(), "builds_failed": serializers.IntegerField(),
    "failure_window_days": serializers.IntegerField(),
    "queue_length": serializers.IntegerField(help_text="deployments queued or waiting for a builder"),
    "agents_online": serializers.IntegerField(), "builders_online": serializers.IntegerField(),
    "at": serializers.DateTimeField(),
})

TiersSerializer = inline_serializer("AdminTiers", {
    "items": inline_serializer("AdminTier", {"plan": serializers.CharField(), "workspaces": serializers.IntegerField(),
                                             "known": serializers.BooleanField(help_text="a plan of PLANS")},
                               many=True),
    "total": serializers.IntegerField(),
})

RevenueSerializer = inline_serializer("RevenueByMonth", {
    "currency": serializers.CharField(),
    "months": inline_serializer("RevenueMonth", {
        "month": serializers.CharField(help_text="YYYY-MM of the invoices' period"),
        "invoiced": serializers.IntegerField(), "paid": serializers.IntegerField(),
        "invoices": serializers.IntegerField()}, many=True)})

ConfigSerializer = inline_serializer("AdminConfig", {
    "debug": serializers.BooleanField(), "allowed_hosts": serializers.ListField(child=serializers.CharField()),
    "site_url": serializers.CharField(),
    "database": inline_serializer("AdminConfigDatabase", {
        "engine": serializers.CharField(), "host": serializers.CharField(allow_null=True),
        "port": serializers.CharField(allow_null=True), "name": serializers.CharField(allow_null=True)}),
    "redis": serializers.CharField(allow_null=True, help_text="without its password"),
    "sandbox": _dict_field(), "build_limits": _dict_field(), "outbound": _dict_field(),
    "providers": serializers.DictField(child=serializers.BooleanField(), help_text="configured or not"),
})

FailuresSerializer = inline_serializer("AdminDeployFailures", {
    "days": serializers.IntegerField(), "since": serializers.DateTimeField(), "failures": serializers.IntegerField(),
    "groups": inline_serializer("AdminFailureGroup", {
        "rule": serializers.CharField(help_text="the doctor's finding, or `unexplained`"),
        "title": serializers.CharField(), "count": serializers.IntegerField(),
        "deployments": serializers.ListField(child=serializers.CharField(), help_text="up to 5, newest first")},
        many=True),
})

class AdminWorkspaceSerializer(ModelSerializer):
    members = serializers.IntegerField(source="member_count")
    projects = serializers.IntegerField(source="project_count")

    class Meta:
        model = Workspace
        fields = ("id", "slug", "name", "plan", "members", "projects", "created_at")


class AdminUserSerializer(ModelSerializer):
    workspaces = serializers.IntegerField(source="workspace_count")

    class Meta:
        model = User
        fields = ("id", "email", "name", "is_active", "is_staff", "date_joined", "workspaces")


class AdminDeploymentSerializer(ModelSerializer):
    org_id = serializers.CharField(source="project.workspace_id")
    project_slug = serializers.CharField(source="project.slug")
    status = serializers.CharField()
    trigger = serializers.CharField()

    class Meta:
        model = Deployment
        fields = ("id", "org_id", "project_id", "project_slug", "env", "branch", "trigger", "status", "created_at",
                  "started_at", "finished_at", "error_message")


class AdminAuditSerializer(ModelSerializer):
    org_id = serializers.CharField(source="workspace_id", allow_null=True)
    actor = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = ("id", "org_id", "actor", "action", "target_type", "target_id", "data", "ip", "created_at")

    def get_actor(self, event) -> str | None:
        return event.actor.email if event.actor_id and event.actor else None


class AdminMemberSerializer(ModelSerializer):
    user_id = serializers.CharField()
    email = serializers.CharField(source="user.email")

    class Meta:
        model = Membership
        fields = ("id", "user_id", "email", "role", "created_at")


class AdminProjectSerializer(ModelSerializer):
    deployments = serializers.IntegerField(source="deployment_count")
    production_deployment_id = serializers.CharField(allow_null=True)
    source = serializers.CharField()

    class Meta:
        model = Project
        fields = ("id", "slug", "name", "source", "framework", "production_deployment_id", "deployments", "created_at")


class AdminNodeSerializer(ModelSerializer):
    status = serializers.CharField()
    class Meta:
        model = AgentNode
        fields = ("id", "name", "status", "runtimes", "capacity", "last_heartbeat_at", "created_at")


OrgDetailSerializer = inline_serializer("AdminOrg", {
    "id": serializers.CharField(), "slug": serializers.CharField(), "name": serializers.CharField(),
    "plan": serializers.CharField(), "created_at": serializers.DateTimeField(),
    "members": AdminMemberSerializer(many=True), "projects": AdminProjectSerializer(many=True),
    "nodes": AdminNodeSerializer(many=True), "counts": _dict_field(),
})


class OverviewView(StaffView):
    @endpoint(scope="admin", response=OverviewSerializer, summary="Platform overview (staff)")
    def get(self, request):
        return Response(selectors.overview())


class TiersView(StaffView):
    @endpoint(scope="admin", response=TiersSerializer, summary="Workspaces per plan (staff)")
    def get(self, request):
        return Response(selectors.tiers())


class RevenueView(StaffView):
    @endpoint(scope="admin", response=RevenueSerializer, summary="Invoiced and paid per month (staff)",
              parameters=[OpenApiParameter("months", {"type": "integer", "minimum": 1},
                                           description="1-36, default 12 (larger values are clamped)")])
    def get(self, request):
        return Response(revenue_by_month(months=query_int(request, "months", default=12, maximum=36)))


class ConfigView(StaffView):
    @endpoint(scope="admin", response=ConfigSerializer, summary="The running settings that matter (staff)",
              description="No key, secret or password: providers are reported as configured or not.")
    def get(self, request):
        return Response(selectors.running_config())


class DeployFailuresView(StaffView):
    @endpoint(scope="admin", response=FailuresSerializer, summary="Failed deployments grouped by the doctor's finding",
              parameters=[OpenApiParameter("days", {"type": "integer", "minimum": 1, "maximum": MAX_DAYS},
                                           description=f"1-{MAX_DAYS}, default 7")])
    def get(self, request):
        days = query_int(request, "days", default=7, maximum=MAX_DAYS, clamp=False)
        return Response(selectors.deploy_failures(days=days))


class OrgListView(StaffView):
    @endpoint(scope="admin", response=AdminWorkspaceSerializer(many=True), summary="Every workspace (staff)")
    def get(self, request):
        return cursor_page(request, selectors.workspaces_list(), AdminWorkspaceSerializer)


class UserListView(StaffView):
    @endpoint(scope="admin", response=AdminUserSerializer(many=True), summary="Every user (staff)")
    def get(self, request):
        return cursor_page(request, selectors.users_list(), AdminUserSerializer, order_field="date_joined")


class DeploymentListView(StaffView):
    @endpoint(scope="admin", response=AdminDeploymentSerializer(many=True), summary="Every deployment (staff)")
    def get(self, request):
        return cursor_page(request, selectors.deployments_list(), AdminDeploymentSerializer)


class AuditListView(StaffView):
    @endpoint(scope="admin", response=AdminAuditSerializer(many=True), summary="The audit log of every workspace")
    def get(self, request):
        return cursor_page(request, selectors.audit_list(), AdminAuditSerializer)


class StaffInvoiceSerializer(InvoiceSerializer):
    workspace_id = serializers.CharField()
    workspace_slug = serializers.CharField(source="workspace.slug")

    class Meta(InvoiceSerializer.Meta):
        fields = (*InvoiceSerializer.Meta.fields, "workspace_id", "workspace_slug")


class AdminUsageSerializer(ModelSerializer):
    workspace_slug = serializers.CharField(source="workspace.slug")

    class Meta:
        model = UsageRecord
        fields = ("id", "workspace_id", "workspace_slug", "project_ref", "project_name", "hour", "meter", "quantity",
                  "updated_at")


class InvoiceListView(StaffView):
    @endpoint(scope="admin", response=StaffInvoiceSerializer(many=True), summary="Every workspace's invoices (staff)")
    def get(self, request):
        return cursor_page(request, invoices_all(), StaffInvoiceSerializer)


class UsageListView(StaffView):
    @endpoint(scope="admin", response=AdminUsageSerializer(many=True), summary="Usage records, newest hour first "
                                                                               "(staff)")
    def get(self, request):
        return cursor_page(request, usage_records_all(), AdminUsageSerializer,
                           order_field="hour")


class OrgDetailView(StaffView):
    @endpoint(scope="admin", response=OrgDetailSerializer, summary="One workspace in full (staff), by id or slug")
    def get(self, request, ref):
        found = selectors.workspace_detail(ref=ref)
        workspace = found["workspace"]
        return Response({
            "id": workspace.pk, "slug": workspace.slug, "name": workspace.name, "plan": workspace.plan,
            "created_at": workspace.created_at,
            "members": AdminMemberSerializer(found["members"], many=True).data,
            "projects": AdminProjectSerializer(found["projects"], many=True).data,
            "nodes": AdminNodeSerializer(found["nodes"], many=True).data, "counts": found["counts"]})
