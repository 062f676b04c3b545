"""API tokens: the caller's own (`/v1/user/tokens`) and a workspace's (`O/api-tokens`)."""
from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import NotFound
from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, cursor_page, endpoint
from platform_app.api.identity.serializers import ApiTokenCreatedSerializer, ApiTokenSerializer
from platform_app.services.identity import tokens as token_services
from platform_app.services.identity.scopes import ALL_SCOPES
from platform_app.services.identity.selectors import api_tokens_active


def _up_to(n: int) -> str:
    """A regular expression of the whole numbers 1..n (no leading zero)."""
    s, parts = str(n), []
    if len(s) > 1:
        parts.append(rf"[1-9]\d{{0,{len(s) - 2}}}")
    for i, digit in enumerate(s):
        low = 1 if i == 0 else 0
        if int(digit) > low:
            parts.append(f"{s[:i]}[{low}-{int(digit) - 1}]" + (rf"\d{{{len(s) - i - 1}}}" if i < len(s) - 1 else ""))
    return "|".join([*parts, s])


def _expires_pattern() -> str:
    days = settings.API_TOKEN_MAX_DAYS
    units = {"m": days * 1440, "h": days * 24, "d": days, "w": days // 7}
    return "^(" + "|".join(f"(?:{_up_to(limit)}){unit}" for unit, limit in units.items() if limit) + ")?$"


@extend_schema_field({"oneOf": [
    {"type": "string", "pattern": rf"^ *({'|'.join(ALL_SCOPES)})( *, *({'|'.join(ALL_SCOPES)}))* *$"},
    {"type": "array", "minItems": 1, "items": {"type": "string", "enum": list(ALL_SCOPES)}}]})
class ScopesField(serializers.JSONField):
    """`"read,deploy"` or `["read", "deploy"]` (parse_scopes checks it)."""


@extend_schema_field({"type": "string", "nullable": True, "pattern": _expires_pattern()})
class ExpiresField(serializers.CharField):
    """`30m`, `12h`, `90d`, `2w` up to API_TOKEN_MAX_DAYS, blank or null (parse_expires checks it)."""


class TokenCreateInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    scopes = ScopesField(help_text='"read,deploy" or ["read", "deploy"]')
    expires = ExpiresField(required=False, allow_null=True, allow_blank=True, default=None,
                           help_text=f"30m, 12h, 90d, 2w (at most {settings.API_TOKEN_MAX_DAYS} days) or null (never)")
    org_id = serializers.CharField(required=False, allow_null=True, default=None,
                                   help_text="Bind to one workspace (id or slug); null: all of yours.")


class WorkspaceTokenCreateInput(TokenCreateInput):
    org_id = None


def _create(view, request, workspace):
    v = validated(TokenCreateInput if workspace is None else WorkspaceTokenCreateInput, request)
    scopes, expires = token_services.validate_token_input(scopes=v["scopes"], expires=v.get("expires"))
    if workspace is None and v.get("org_id"):
        workspace = view.enter(v["org_id"], None).workspace  # the workspace's own rules (allowlist, SSO) apply
    actor = view.actor
    if actor and actor.workspace_id and (workspace is None or workspace.pk != actor.workspace_id):
        # a bound token cannot mint a token reaching further than itself
        raise NotFound("No such workspace.")
    token, raw = token_services.api_token_create(user=request.user, name=v["name"], scopes=scopes, expires=expires,
                                                 workspace=workspace, ip=view.ip)
    return Response(ApiTokenCreatedSerializer(token, context={"plain_token": raw}).data, status=201)


class UserTokenListView(PlatformView):
    @endpoint(scope="read", response=ApiTokenSerializer(many=True), summary="Your API tokens (metadata only)")
    def get(self, request):
        return cursor_page(request, api_tokens_active(user=request.user),
                           ApiTokenSerializer)

    @endpoint(scope="admin", status=201, request=TokenCreateInput, response=ApiTokenCreatedSerializer, errors=(404,),
              summary="Create an API token", description="The plain `token` is in this response only.")
    def post(self, request):
        return _create(self, request, None)


class UserTokenDetailView(PlatformView):
    @endpoint(scope="admin", response=ApiTokenSerializer, summary="Revoke an API token immediately")
    def delete(self, request, token_id):
        token = token_services.api_token_get(user=request.user, token_id=token_id)
        token = token_services.api_token_revoke(token=token, actor=request.user, ip=self.ip)
        return Response(ApiTokenSerializer(token).data)


class WorkspaceTokenListView(PlatformView):
    @endpoint(scope="admin", response=ApiTokenSerializer(many=True), summary="Tokens bound to this workspace")
    def get(self, request, org_id):
        return cursor_page(request, api_tokens_active(workspace=self.workspace),
                           ApiTokenSerializer)

    @endpoint(scope="admin", status=201, request=WorkspaceTokenCreateInput, response=ApiTokenCreatedSerializer,
              summary="Create a token bound to this workspace")
    def post(self, request, org_id):
        return _create(self, request, self.workspace)


class WorkspaceTokenDetailView(PlatformView):
    @endpoint(scope="admin", response=ApiTokenSerializer, summary="Revoke a workspace token")
    def delete(self, request, org_id, token_id):
        token = token_services.api_token_get(user=request.user, token_id=token_id, workspace=self.workspace)
        token = token_services.api_token_revoke(token=token, actor=request.user, ip=self.ip)
        return Response(ApiTokenSerializer(token).data)
