"""Single sign-on, the SCIM token and the IP allowlist of a workspace (O = /v1/orgs/{orgId}; `admin` scope), and
the SSO sign-in routes (`/v1/auth/sso/{org}/start`, `/callback`: public, like social sign-in). SCIM itself is
platform_app/api/org/scim.py, at /scim/v2/."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.api.identity.auth import _user_agent
from platform_app.api.identity.serializers import AuthResultSerializer
from platform_app.api.providers.git import CALLBACK, RETURN_TO, UrlSerializer
from platform_app.models import IpAllowlistEntry
from platform_app.services.identity.oauth_state import state_binding, state_cookie_set
from platform_app.services.org import allowlist as allowlist_services
from platform_app.services.org import sso as sso_services

ROLE = field_with_schema({"type": "string", "enum": list(sso_services.ASSIGNABLE_ROLES)})


class SsoSettingsSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    issuer = serializers.CharField()
    client_id = serializers.CharField()
    client_secret_set = serializers.BooleanField(help_text="A client secret is stored (it is never returned).")
    allowed_domains = serializers.ListField(child=serializers.CharField())
    require_sso = serializers.BooleanField()
    default_role = serializers.CharField()
    scim_enabled = serializers.BooleanField()
    scim_token_prefix = serializers.CharField(allow_null=True)
    scim_token_created_at = serializers.DateTimeField(allow_null=True)
    scim_base_url = serializers.CharField()
    redirect_uris = serializers.ListField(child=serializers.CharField(),
                                          help_text="Register both at the provider: API sign-in, dashboard sign-in.")
    sign_in_url = serializers.CharField()


class SsoInput(InputSerializer):
    enabled = serializers.BooleanField()
    issuer = serializers.CharField(max_length=500, allow_blank=True, default="",
                                   help_text="https; its discovery document is fetched through the outbound guard.")
    client_id = serializers.CharField(max_length=255, allow_blank=True, default="")
    client_secret = serializers.CharField(max_length=1000, required=False, write_only=True,
                                          help_text="Stored encrypted, never returned; omit to keep the stored one.")
    allowed_domains = serializers.ListField(child=serializers.CharField(max_length=253), max_length=50, default=list,
                                            help_text="Email domains that may join just in time.")
    require_sso = serializers.BooleanField(default=False)
    default_role = ROLE(max_length=16, required=False)
    scim_enabled = serializers.BooleanField(required=False)


ScimTokenSerializer = inline_serializer("ScimToken", {
    "token": serializers.CharField(help_text="Shown once; a new token replaces the old."),
    "scim_base_url": serializers.CharField()})


class AllowlistEntrySerializer(ModelSerializer):
    class Meta:
        model = IpAllowlistEntry
        fields = ("id", "cidr", "note", "created_at")


class AllowlistInput(InputSerializer):
    cidr = serializers.CharField(max_length=64, help_text="IPv4 or IPv6 network, or one address.")
    note = serializers.CharField(max_length=200, allow_blank=True, default="")
    confirm = serializers.BooleanField(default=False, help_text="Add it even if your own address is left out.")


CONFIRM = OpenApiParameter("confirm", {"type": "string", "enum": ["true", "false"]},
                           description="`true`: delete even if your own address is left out")
Deleted = inline_serializer("AllowlistEntryDeleted", {"deleted": serializers.BooleanField()})


class SsoSettingsView(PlatformView):
    @endpoint(scope="admin", response=SsoSettingsSerializer, summary="Single sign-on settings")
    def get(self, request, org_id):
        return Response(SsoSettingsSerializer(sso_services.sso_describe(workspace=self.workspace)).data)

    @endpoint(scope="admin", request=SsoInput, response=SsoSettingsSerializer, errors=(502,),
              summary="Replace the single sign-on settings",
              description="Enabling fetches the issuer's discovery document through the outbound guard (400 naming "
                          "`issuer` when refused or unusable). `requireSso` needs `enabled`.")
    def put(self, request, org_id):
        v = validated(SsoInput, request)
        row = sso_services.sso_update(workspace=self.workspace, actor=request.user, ip=self.ip, **v)
        return Response(SsoSettingsSerializer(sso_services.sso_describe(workspace=self.workspace, row=row)).data)

    @endpoint(scope="admin", response=SsoSettingsSerializer, summary="Remove single sign-on and SCIM",
              description="Settings, SCIM token, linked identities and SCIM records go; members stay.")
    def delete(self, request, org_id):
        sso_services.sso_delete(workspace=self.workspace, actor=request.user, ip=self.ip)
        return Response(SsoSettingsSerializer(sso_services.sso_describe(workspace=self.workspace)).data)


class ScimTokenView(PlatformView):
    @endpoint(scope="admin", status=201, response=ScimTokenSerializer, summary="A new SCIM token (shown once)",
              description="Owners only (403 for an admin): replaces the previous token at once and turns SCIM "
                          "on.")
    def post(self, request, org_id):
        token = sso_services.scim_token_rotate(workspace=self.workspace, actor=request.user, ip=self.ip)
        return Response({"token": token, "scim_base_url": sso_services.scim_base_url()}, status=201)


class IpAllowlistView(PlatformView):
    @endpoint(scope="admin", response=AllowlistEntrySerializer(many=True), summary="IP allowlist")
    def get(self, request, org_id):
        return cursor_page(request, allowlist_services.allowlist_entries(workspace=self.workspace),
                           AllowlistEntrySerializer)

    @endpoint(scope="admin", status=201, request=AllowlistInput, response=AllowlistEntrySerializer,
              summary="Allow a network",
              description="409 `allowlist_lockout` when your own address would not be on the list, unless "
                          "`confirm` is true.")
    def post(self, request, org_id):
        v = validated(AllowlistInput, request)
        entry = allowlist_services.allowlist_entry_add(workspace=self.workspace, actor=request.user, ip=self.ip, **v)
        return Response(AllowlistEntrySerializer(entry).data, status=201)


class IpAllowlistEntryView(PlatformView):
    @endpoint(scope="admin", response=Deleted, parameters=[CONFIRM], summary="Remove a network",
              description="409 `allowlist_lockout` when your own address would be left out, unless `?confirm=true`.")
    def delete(self, request, org_id, entry_id):
        allowlist_services.allowlist_entry_delete(workspace=self.workspace, actor=request.user, entry_id=entry_id,
                                                  ip=self.ip, confirm=request.query_params.get("confirm") == "true")
        return Response({"deleted": True})


# Sign-in -----------------------------------------------------------------------------------------

class SsoStartView(PlatformView):
    @endpoint(public=True, response=UrlSerializer, errors=(502,), parameters=[RETURN_TO],
              summary="Start signing in through a workspace's single sign-on (answers the provider URL)",
              description="`org` is the workspace's id or slug. Sent with a credential, the identity is linked to "
                          "that account at the callback. Sets a cookie the callback must carry: the flow ends in "
                          "the browser that started it (else 403 `oauth_state_not_bound`).")
    def get(self, request, org):
        user = request.user if request.user.is_authenticated else None
        url, state, row = sso_services.sso_sign_in_start(workspace_ref=org, user=user,
                                                         return_to=request.query_params.get("returnTo", ""))
        return state_cookie_set(Response({"url": url, "state": state}), row,
                                callback_url=sso_services.sso_redirect_uri(row.workspace))


class SsoCallbackView(PlatformView):
    @endpoint(public=True, response=AuthResultSerializer, parameters=CALLBACK, errors=(403, 502),
              summary="Single sign-on callback: signs in (or creates) the member and starts an SSO session")
    def get(self, request, org):
        params = request.query_params
        user, workspace, state_row = sso_services.sso_sign_in_finish(
            workspace_ref=org, state=params.get("state", ""), binding=state_binding(request),
            code=params.get("code", ""), error=params.get("error", ""), ip=self.ip)
        issued = sso_services.sso_session_start(user=user, workspace=workspace, ip=self.ip,
                                                user_agent=_user_agent(request))
        return Response({**AuthResultSerializer(issued).data, "return_to": state_row.return_to or None,
                         "org_id": workspace.pk})
