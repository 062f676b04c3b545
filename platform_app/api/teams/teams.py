"""Workspace stats and activity; members; invitations."""
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, query_int, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint
from platform_app.api.identity.serializers import UserSerializer
from platform_app.choices import Role
from platform_app.models import AuditEvent, Invitation, Membership
from platform_app.services.teams import invitations as invitation_services
from platform_app.services.teams import members as member_services
from platform_app.services.teams.workspaces import workspace_stats
from platform_app.services.teams.selectors import audit_events, invitations_of, members_of


# Serializers -----------------------------------------------------------------------

class WorkspaceStatsSerializer(serializers.Serializer):
    projects = serializers.IntegerField()
    members = serializers.IntegerField()
    pending_invitations = serializers.IntegerField()
    deployments_this_month = serializers.IntegerField()
    deployments_by_status = serializers.DictField(child=serializers.IntegerField())
    period_start = serializers.DateTimeField()


class ActivitySerializer(ModelSerializer):
    actor = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = ("id", "action", "actor", "target_type", "target_id", "data", "created_at")

    def get_actor(self, obj) -> dict | None:
        return {"id": obj.actor_id, "email": obj.actor.email, "name": obj.actor.name} if obj.actor else None


class MemberSerializer(ModelSerializer):
    user = UserSerializer()

    class Meta:
        model = Membership
        fields = ("id", "role", "user", "created_at")


class MemberUpdateInput(InputSerializer):
    role = serializers.ChoiceField(choices=Role.choices, help_text="owner, admin, developer, viewer or billing")


class InvitationSerializer(ModelSerializer):
    """Never carries the token or its hash."""

    org_id = serializers.CharField(source="workspace_id")
    org_name = serializers.CharField(source="workspace.name")
    org_slug = serializers.CharField(source="workspace.slug")
    invited_by = serializers.SerializerMethodField()
    expired = serializers.BooleanField(source="is_expired")

    class Meta:
        model = Invitation
        fields = ("id", "org_id", "org_name", "org_slug", "email", "role", "status", "invited_by", "created_at",
                  "expires_at", "expired", "answered_at")

    def get_invited_by(self, obj) -> dict | None:
        user = obj.invited_by
        return {"id": user.pk, "email": user.email, "name": user.name} if user else None


class InvitationCreateInput(InputSerializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices, default=Role.DEVELOPER,
                                   help_text="owner, admin, developer, viewer or billing")


class AcceptedSerializer(serializers.Serializer):
    invitation = InvitationSerializer()
    member = MemberSerializer()


# Workspace -------------------------------------------------------------------------

class WorkspaceStatsView(PlatformView):
    @endpoint(scope="read", response=WorkspaceStatsSerializer, summary="Projects, members, deployments this month")
    def get(self, request, org_id):
        return Response(WorkspaceStatsSerializer(workspace_stats(workspace=self.workspace)).data)


class WorkspaceActivityView(PlatformView):
    @endpoint(scope="read", response=ActivitySerializer(many=True), summary="The workspace audit log, newest first",
              parameters=[OpenApiParameter("limit", int, description="1-100, default 20"),
                          OpenApiParameter("cursor", str)])
    def get(self, request, org_id):
        query_int(request, "limit", default=20, maximum=100)
        return cursor_page(request, audit_events(workspace=self.workspace, limit=None),
                           ActivitySerializer)


# Members ---------------------------------------------------------------------------

class MemberListView(PlatformView):
    @endpoint(scope="read", response=MemberSerializer(many=True), summary="Members and their roles")
    def get(self, request, org_id):
        return cursor_page(request, members_of(workspace=self.workspace),
                           MemberSerializer)


class MemberDetailView(PlatformView):
    @endpoint(scope="admin", request=MemberUpdateInput, response=MemberSerializer, summary="Change a member's role",
              description="Only an owner grants or takes the owner role; the last owner cannot be demoted (409).")
    def patch(self, request, org_id, member_id):
        data = validated(MemberUpdateInput, request)
        member = member_services.member_role_change(workspace=self.workspace, actor_membership=self.membership,
                                                    member_id=member_id, role=data["role"], ip=self.ip)
        return Response(MemberSerializer(member).data)

    @endpoint(scope="admin", response=MemberSerializer, summary="Remove a member (revokes their workspace tokens)")
    def delete(self, request, org_id, member_id):
        member = member_services.member_remove(workspace=self.workspace, actor_membership=self.membership,
                                               member_id=member_id, ip=self.ip)
        return Response(MemberSerializer(member).data)


# Invitations -----------------------------------------------------------------------

class WorkspaceInvitationListView(PlatformView):
    @endpoint(scope="admin", response=InvitationSerializer(many=True), summary="Invitations of this workspace")
    def get(self, request, org_id):
        qs = invitations_of(workspace=self.workspace, status=request.query_params.get("status"))
        return cursor_page(request, qs, InvitationSerializer)

    @endpoint(scope="admin", status=201, request=InvitationCreateInput, response=InvitationSerializer,
              summary="Invite someone by email",
              description="Emails a single-use accept link valid 7 days. An existing member is 409.")
    def post(self, request, org_id):
        data = validated(InvitationCreateInput, request)
        invitation, _raw = invitation_services.invitation_create(
            workspace=self.workspace, actor_membership=self.membership, ip=self.ip, **data)
        return Response(InvitationSerializer(invitation).data, status=201)


class MyInvitationListView(PlatformView):
    @endpoint(scope="read", response=InvitationSerializer(many=True),
              summary="Pending invitations addressed to your email",
              description="403 `email_unverified` until your address is verified (POST /v1/auth/email/verification).")
    def get(self, request):
        return cursor_page(request, invitation_services.invitations_for_user(request.user), InvitationSerializer)


class InvitationDetailView(PlatformView):
    @endpoint(public=True, response=InvitationSerializer, summary="An invitation by the token of its link",
              description="Public so the link's landing page can show it before sign-in.")
    def get(self, request, token):
        return Response(InvitationSerializer(invitation_services.invitation_by_token(token)).data)


class InvitationAcceptView(PlatformView):
    @endpoint(scope="read", status=201, response=AcceptedSerializer, summary="Accept: join the workspace",
              description="The signed-in user's email must be the invited one (404 otherwise) and verified "
                          "(403 `email_unverified`). "
                          "A used or declined invitation is 409 `invitation_used`, an expired one 409 "
                          "`invitation_expired`.")
    def post(self, request, token):
        member = invitation_services.invitation_accept(raw_token=token, user=request.user, ip=self.ip)
        invitation = invitation_services.invitation_by_token(token)
        return Response({"invitation": InvitationSerializer(invitation).data, "member": MemberSerializer(member).data},
                        status=201)


class InvitationDeclineView(PlatformView):
    @endpoint(scope="read", status=201, response=InvitationSerializer, summary="Decline an invitation")
    def post(self, request, token):
        invitation = invitation_services.invitation_decline(raw_token=token, user=request.user, ip=self.ip)
        return Response(InvitationSerializer(invitation).data, status=201)
