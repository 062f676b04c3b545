"""Git provider connections: install/connect flows, repositories, installations, disconnect."""
from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ApplicationError, ValidationFailed
from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint
from platform_app.models import GitConnection, GitInstallation
from platform_app.providers import git_host
from platform_app.services.providers import git_connections as connections
from platform_app.services.identity.oauth_state import (state_binding, state_consume, state_cookie_set,
                                                        state_start)
from platform_app.services.identity.social import identity_link
from platform_app.services.providers.selectors import git_connections_of, git_installations_unclaimed

UrlSerializer = inline_serializer("ProviderRedirect", {"url": serializers.URLField(), "state": serializers.CharField()})


def redirect_uri(path: str) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/v1/auth/{path}"


def admin_workspace(view, ref: str | None):
    """The workspace named by `orgId`, for an admin of it (404 for non-members, 403 below admin)."""
    if not ref:
        raise ValidationFailed("orgId is required.", details={"orgId": ["Required."]})
    return view.enter(ref, "admin").workspace


def provider_error(request):
    if request.query_params.get("error"):
        raise ApplicationError(f"The provider answered: {request.query_params['error']}", code="provider_denied",
                               status=400)


def callback_code(request) -> str:
    """The authorization code of a callback. Blank or missing is 400 naming `code` before the state is spent or
    any provider is asked; when the provider answered `error` instead, that is reported (after the state check)."""
    if request.query_params.get("error"):
        return ""
    code = request.query_params.get("code", "").strip()
    if not code:
        raise ValidationFailed("code is required.", details={"code": ["Required."]})
    return code


# where a provider is called: it may not answer (502 `provider_error`) or not be configured (503)
PROVIDER_ERRORS = (502, 503)
# a callback also refuses a browser other than the one that started the flow (403 `oauth_state_not_bound`)
CALLBACK_ERRORS = (403, *PROVIDER_ERRORS)


class ConnectionSerializer(ModelSerializer):
    class Meta:
        model = GitConnection
        fields = ("id", "provider", "account", "installation_id", "created_at")


# where the browser goes back to after the provider: a path on this site (or a URL of an ALLOWED_RETURN_ORIGINS)
RETURN_TO = OpenApiParameter("returnTo", {"type": "string", "pattern": r"^(/(?!/)[^\\\u0000-\u001f\u007f]*)?$"},
                             description="a path on this site, e.g. /dashboard/")
ORG = [OpenApiParameter("orgId", {"type": "string", "pattern": r"\S"}, required=True,
                        description="workspace id or slug"), RETURN_TO]
CALLBACK = [OpenApiParameter("code", str), OpenApiParameter("state", str), OpenApiParameter("error", str)]


class InstallView(PlatformView):
    """git-a app installation, git-b / git-c OAuth connection: answers the provider URL to send the browser to."""

    provider = ""

    @endpoint(scope=None, response=UrlSerializer, errors=(403, 404, 503),
              summary="Start connecting a Git provider to a workspace",
              parameters=[*ORG, OpenApiParameter("mode", str)])
    def get(self, request):
        host = git_host(self.provider)
        host.require_configured()
        workspace = admin_workspace(self, request.query_params.get("orgId"))
        purpose = "install" if self.provider == "git-a" else "connect"
        row, state = state_start(purpose=purpose, provider=self.provider, user=request.user, workspace=workspace,
                                 return_to=request.query_params.get("returnTo", ""))
        callback = redirect_uri(f"{self.provider}/callback")  # git-a: the app's setup URL
        url = (host.install_url(state=state) if self.provider == "git-a"
               else host.authorize_url(state=state, redirect_uri=callback))
        return state_cookie_set(Response({"url": url, "state": state}), row, callback_url=callback)


class ConnectCallbackView(PlatformView):
    """git-b / git-c OAuth callback: exchange the code, store the connection."""

    provider = ""

    @endpoint(public=True, response=ConnectionSerializer, summary="OAuth callback of a Git provider connection",
              parameters=CALLBACK, errors=CALLBACK_ERRORS)
    def get(self, request):
        code = callback_code(request)
        row = state_consume(value=request.query_params.get("state", ""), purpose="connect", provider=self.provider,
                            binding=state_binding(request))
        provider_error(request)
        host = git_host(self.provider)
        token = host.exchange_code(code=code, redirect_uri=redirect_uri(f"{self.provider}/callback"))
        conn = connections.connection_save(workspace=row.workspace, provider=self.provider, token=token,
                                           account=host.user(token).login, actor=row.user)
        return Response({**ConnectionSerializer(conn).data, "return_to": row.return_to or None})


class GitAInstallCallbackView(PlatformView):
    @endpoint(public=True, response=ConnectionSerializer, summary="git-a app installation callback",
              parameters=[OpenApiParameter("installation_id", str), OpenApiParameter("setup_action", str), *CALLBACK],
              errors=CALLBACK_ERRORS)
    def get(self, request):
        installation_id = request.query_params.get("installation_id", "")
        if not installation_id.isdigit():
            raise ValidationFailed("installation_id is required.", details={"installation_id": ["Required."]})
        row = state_consume(value=request.query_params.get("state", ""), purpose="install", provider="git-a",
                            binding=state_binding(request))
        connections.installation_record(installation_id=installation_id, workspace=row.workspace)
        token, account = "", ""
        if request.query_params.get("code"):
            host = git_host("git-a")
            token = host.exchange_code(code=request.query_params["code"], redirect_uri=redirect_uri("git-a/callback"))
            account = host.user(token).login
        conn = connections.connection_save(workspace=row.workspace, provider="git-a", token=token, account=account,
                                           installation_id=installation_id, actor=row.user)
        return Response({**ConnectionSerializer(conn).data, "return_to": row.return_to or None})


class GitAUserLinkView(PlatformView):
    @endpoint(scope=None, response=UrlSerializer, errors=(403, 404, 503),
              summary="Link your git-a account (its token lists repositories)",
              parameters=ORG)
    def get(self, request):
        host = git_host("git-a")
        host.require_configured()
        workspace = admin_workspace(self, request.query_params.get("orgId"))
        row, state = state_start(purpose="link", provider="git-a", user=request.user, workspace=workspace,
                                 return_to=request.query_params.get("returnTo", ""))
        callback = redirect_uri("git-a/user-callback")
        return state_cookie_set(Response({"url": host.authorize_url(state=state, redirect_uri=callback),
                                          "state": state}), row, callback_url=callback)


class GitAUserCallbackView(PlatformView):
    @endpoint(public=True, response=ConnectionSerializer, summary="git-a user-link callback", parameters=CALLBACK,
              errors=CALLBACK_ERRORS)
    def get(self, request):
        code = callback_code(request)
        row = state_consume(value=request.query_params.get("state", ""), purpose="link", provider="git-a",
                            binding=state_binding(request))
        provider_error(request)
        host = git_host("git-a")
        token = host.exchange_code(code=code, redirect_uri=redirect_uri("git-a/user-callback"))
        info = host.user(token)
        identity_link(user=row.user, provider="git-a", info=info)
        conn = connections.connection_save(workspace=row.workspace, provider="git-a", token=token, account=info.login,
                                           actor=row.user)
        return Response({**ConnectionSerializer(conn).data, "return_to": row.return_to or None})


class ConnectionListView(PlatformView):
    @endpoint(scope="read", response=ConnectionSerializer(many=True), summary="Git provider connections")
    def get(self, request, org_id):
        rows = git_connections_of(workspace=self.workspace)
        return Response({"items": ConnectionSerializer(rows, many=True).data, "next_cursor": None})


class RepoListView(PlatformView):
    @endpoint(scope="read", summary="Repositories reachable through a connection (from the provider's API)",
              errors=PROVIDER_ERRORS, response=inline_serializer("GitRepos", {"items": serializers.ListField(child=serializers.DictField())}))
    def get(self, request, org_id, provider):
        return Response({"items": connections.repos_list(workspace=self.workspace, provider=git_host(provider).name),
                         "next_cursor": None})


class ConnectionDeleteView(PlatformView):
    @endpoint(scope="admin", summary="Disconnect a Git provider",
              response=inline_serializer("GitDisconnected", {"deleted": serializers.BooleanField()}))
    def delete(self, request, org_id, provider):
        connections.connection_delete(workspace=self.workspace, provider=git_host(provider).name, actor=request.user)
        return Response({"deleted": True})


class InstallationSerializer(ModelSerializer):
    class Meta:
        model = GitInstallation
        fields = ("installation_id", "account", "created_at")


class UnclaimedInstallationsView(PlatformView):
    @endpoint(scope="admin", response=InstallationSerializer(many=True), summary="git-a installations no workspace claimed")
    def get(self, request, org_id):
        rows = git_installations_unclaimed()
        return Response({"items": InstallationSerializer(rows, many=True).data, "next_cursor": None})


class GitClaimInput(InputSerializer):
    installation_id = serializers.CharField(max_length=40)


class ClaimView(PlatformView):
    @endpoint(scope="admin", status=201, request=GitClaimInput, response=ConnectionSerializer,
              summary="Claim an unclaimed git-a installation for this workspace")
    def post(self, request, org_id):
        data = validated(GitClaimInput, request)
        conn = connections.installation_claim(workspace=self.workspace,
                                              installation_id=data["installation_id"], actor=request.user)
        return Response(ConnectionSerializer(conn).data, status=201)
