"""The platform's MCP endpoint (Model Context Protocol, Streamable HTTP) and its OAuth 2.1 authorization server
(docs/mcp.md).

- `POST /v1/mcp`: one JSON-RPC message; the answer is 201 with the JSON-RPC response (202 for a notification).
  `initialize` answers an `Mcp-Session-Id`, which every later request carries (400 without, 404 when unknown).
- `GET /v1/mcp`: with `Accept: text/event-stream`, the server's stream (keep-alive comments; this server sends no
  requests of its own); otherwise the discovery document.
- Without a valid bearer token: 401 with `WWW-Authenticate: Bearer resource_metadata="..."`, where the client
  finds the protected resource's metadata, then the authorization server's.
- `/v1/mcp/authorize` (consent), `/v1/mcp/token` (201, OAuth's own snake_case fields and errors),
  `/v1/mcp/register` (RFC 7591).
"""
import asyncio
import json
import time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import FormParser, JSONParser

from config.errors import ApplicationError
from config.event_streams import stream_counted
from platform_app.api.base import PlatformView, endpoint
from platform_app.authentication import BearerAuthentication, CookieSessionAuthentication
from platform_app.services.deployments.log_stream import iterate_blocking
from platform_app.services.identity.scopes import ALL_SCOPES
from platform_app.services.mcp import oauth, server
from platform_app.services.org.access import Credential
from platform_app.services.mcp.tools import TOOLS


def origin(request) -> str:
    return f"{request.scheme}://{request.get_host()}"


def resource_metadata_url(request) -> str:
    return f"{origin(request)}/.well-known/oauth-protected-resource/v1/mcp"


def _unauthorized(request, message: str = "Send an MCP access token (OAuth) or an API token as a bearer token."):
    response = JsonResponse({"code": "unauthenticated", "message": message, "details": None, "status": 401},
                            status=401)
    response["WWW-Authenticate"] = (f'Bearer resource_metadata="{resource_metadata_url(request)}", '
                                     f'scope="{settings.MCP_DEFAULT_SCOPES}"')
    return response


def _caller(request):
    """(user, actor) of a valid bearer token, or None."""
    try:
        found = BearerAuthentication().authenticate(request)
    except Exception:  # noqa: BLE001 - any refused token: the client is sent to authorization again
        return None
    if found is None:
        return None
    return found


class McpView(PlatformView):
    authentication_classes = []
    parser_classes = [JSONParser]

    def perform_content_negotiation(self, request, force=False):
        # `Accept: text/event-stream` asks for the stream, which the view answers itself
        return super().perform_content_negotiation(request, force=True)

    @endpoint(public=True, summary="Discovery (or, with `Accept: text/event-stream` and a token, the server stream)",
              errors=(429,),
              response=inline_serializer("McpDiscovery", {
                  "name": serializers.CharField(), "version": serializers.CharField(),
                  "protocol_versions": serializers.ListField(), "tools": serializers.ListField(),
                  "authorization_server": serializers.CharField()}))
    def get(self, request):
        if "text/event-stream" in request.headers.get("Accept", ""):
            caller = _caller(request)
            if caller is None:
                return _unauthorized(request)
            return _stream(holder=caller[0].pk, asynchronous=isinstance(request._request, ASGIRequest))
        return JsonResponse({"name": server.SERVER["name"], "version": server.SERVER["version"],
                             "protocolVersions": list(server.PROTOCOL_VERSIONS), "tools": list(TOOLS),
                             "authorizationServer": origin(request)})

    @endpoint(public=True, status=201, errors=(400, 401, 404), also={202: None},
              request={"application/json": OpenApiTypes.OBJECT},
              response=OpenApiResponse(description="the JSON-RPC response"),
              summary="One JSON-RPC message of the MCP Streamable HTTP transport")
    def post(self, request):
        caller = _caller(request)
        if caller is None:
            return _unauthorized(request)
        user, actor = caller
        # what the access service checks in every workspace a tool touches (allowlist, require SSO, scopes, role)
        credential = Credential(ip=self.ip, scopes=frozenset(actor.scopes), bound_workspace_id=actor.workspace_id,
                                token=actor.token, auth_session=actor.session)
        try:
            message = json.loads(request.body or b"null")
        except ValueError:
            return JsonResponse(server._error(None, server.PARSE_ERROR, "Not JSON."), status=400)
        is_initialize = isinstance(message, dict) and message.get("method") == "initialize"
        session_id = request.headers.get("Mcp-Session-Id", "")
        if not is_initialize:
            if not session_id:
                return JsonResponse(server._error(None, server.INVALID_REQUEST, "Send the Mcp-Session-Id that "
                                                                                "initialize answered."), status=400)
            if not server.session_valid(session_id, user):
                return JsonResponse(server._error(None, server.INVALID_REQUEST, "Unknown session: initialize "
                                                                                "again."), status=404)
        answer = server.handle(message, user=user, credential=credential)
        if answer is None:
            return HttpResponse(status=202)
        response = JsonResponse(answer, status=201)
        if is_initialize and "result" in answer:
            response["Mcp-Session-Id"] = server.session_new(user)
        return response

    @endpoint(public=True, status=204, response=None, summary="End the session (sessions keep no state here)")
    def delete(self, request):
        return HttpResponse(status=204)


def _stream(*, holder, asynchronous: bool):
    """Keep-alive comments until MCP_STREAM_SECONDS; the client opens it again. Under ASGI an async body, which
    holds no thread while open. One of `holder`'s open streams (config/event_streams.py) until it ends."""
    seconds = settings.MCP_STREAM_SECONDS

    async def events(on_end):
        try:
            yield b": stream open\n\n"
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                await asyncio.sleep(min(15, max(0.0, end - time.monotonic())))
                yield b": keep-alive\n\n"
        finally:
            on_end()

    body = stream_counted(holder, lambda on_end: events(on_end) if asynchronous else
                          iterate_blocking(lambda run: events(on_end)))
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


# never a redirect to a URI the request did not prove the client registered
REFUSED_PAGE = {(400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="a page saying why the request is "
                                                                                   "refused")}


class AuthorizeView(PlatformView):
    """The consent page: a signed-in user lets an MCP client act for them, with the scopes it asks for (and may
    bind it to one workspace); the code goes to the client's redirect URI with its `state`."""

    authentication_classes = [CookieSessionAuthentication]
    parser_classes = [FormParser]
    permission_classes = []

    @endpoint(public=True, status=(200, "text/html"),
              summary="Consent page for an MCP client (OAuth 2.1 authorization code with PKCE)",
              parameters=[OpenApiParameter("client_id", str, required=True),
                          OpenApiParameter("redirect_uri", str, required=True,
                                           description="one the client registered"),
                          OpenApiParameter("code_challenge", str, required=True, description="43-128 characters"),
                          OpenApiParameter("code_challenge_method", str, required=True, enum=["S256"]),
                          OpenApiParameter("response_type", str, enum=["code"]),
                          OpenApiParameter("state", str), OpenApiParameter("scope", str)],
              response=OpenApiResponse(OpenApiTypes.STR, description="the consent page"),
              also={302: OpenApiResponse(description="to sign in first"), **REFUSED_PAGE})
    def get(self, request):
        try:
            asked = oauth.authorize_check(request.query_params)
        except oauth.OAuthError as exc:
            return render(request, "platform_app/mcp/authorize_error.html", {"error": exc}, status=400)
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        from platform_app.services.teams.workspaces import workspaces_of

        return render(request, "platform_app/mcp/consent.html", {
            "client": asked["client"], "scopes": asked["scopes"], "params": request.query_params,
            "workspaces": workspaces_of(request.user)})

    @endpoint(public=True, status=302, request=None,
              summary="The user's decision: a redirect to the client with the code (or to sign in first)",
              response=OpenApiResponse(description="a redirect"), also=REFUSED_PAGE)
    def post(self, request):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        try:
            asked = oauth.authorize_check(request.data)
        except oauth.OAuthError as exc:
            return render(request, "platform_app/mcp/authorize_error.html", {"error": exc}, status=400)
        query = {"state": asked["state"]} if asked["state"] else {}
        granted = [s for s in asked["scopes"] if s in request.data.getlist("granted")]
        if request.data.get("decision") != "approve" or not granted:
            query["error"] = "access_denied"
        else:
            asked["scopes"] = granted
            workspace = None
            if request.data.get("workspace"):  # bound to it through the one access check, as every way in
                from platform_app.services.org.access import workspace_enter

                credential = Credential(ip=self.ip, cookie_session=request.session)
                try:
                    workspace = workspace_enter(user=request.user, ref=request.data["workspace"], scope=None,
                                                credential=credential).workspace
                except ApplicationError as exc:
                    refused = oauth.OAuthError(exc.code, exc.message, exc.status)
                    return render(request, "platform_app/mcp/authorize_error.html", {"error": refused},
                                  status=exc.status)
            query["code"] = oauth.authorization_code_create(user=request.user, request=asked, workspace=workspace)
        separator = "&" if "?" in asked["redirect_uri"] else "?"
        return HttpResponseRedirect(asked["redirect_uri"] + separator + urlencode(query))


OAUTH_ERROR = OpenApiResponse(
    inline_serializer("McpOAuthError", {"error": serializers.CharField(), "error_description": serializers.CharField()}),
    description="OAuth's own error shape (RFC 6749 §5.2, RFC 7591 §3.2.2)")


NOT_A_BODY = "The body is not a form or a JSON object."


def _oauth_body(request):
    """The request's fields, or None when its body does not parse: OAuth endpoints answer that in OAuth's shape."""
    try:
        data = request.data
    except ParseError:
        return None
    return data if hasattr(data, "get") else None


def _oauth_answer(body: dict, status: int):
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


class TokenView(PlatformView):
    authentication_classes = []
    parser_classes = [FormParser, JSONParser]

    @endpoint(public=True, status=201, also={400: OAUTH_ERROR, 401: OAUTH_ERROR},
              summary="Exchange a code (with its PKCE verifier), or "
                                                                    "refresh; OAuth's own fields and errors",
              request={"application/x-www-form-urlencoded": OpenApiTypes.OBJECT},
              response=inline_serializer("McpTokens", {
                  "access_token": serializers.CharField(), "token_type": serializers.CharField(),
                  "expires_in": serializers.IntegerField(), "refresh_token": serializers.CharField(),
                  "scope": serializers.CharField()}))
    def post(self, request):
        data = _oauth_body(request)
        if data is None:
            return _oauth_answer({"error": "invalid_request", "error_description": NOT_A_BODY}, 400)
        try:
            if data.get("grant_type") == "authorization_code":
                body = oauth.token_exchange(code=data.get("code", ""), client_id=data.get("client_id", ""),
                                            redirect_uri=data.get("redirect_uri", ""),
                                            code_verifier=data.get("code_verifier", ""))
            elif data.get("grant_type") == "refresh_token":
                body = oauth.token_refresh(refresh_token=data.get("refresh_token", ""),
                                           client_id=data.get("client_id", ""))
            else:
                raise oauth.OAuthError("unsupported_grant_type", "grant_type: authorization_code or refresh_token.")
        except oauth.OAuthError as exc:
            return _oauth_answer(exc.body(), exc.status)
        return _oauth_answer(body, 201)


class RegisterView(PlatformView):
    authentication_classes = []
    parser_classes = [JSONParser]

    @endpoint(public=True, status=201, also={400: OAUTH_ERROR}, request={"application/json": OpenApiTypes.OBJECT},
              response=OpenApiResponse(description="the registered client (RFC 7591)"),
              summary="Register an MCP client (dynamic client registration, public clients)")
    def post(self, request):
        data = _oauth_body(request)
        if data is None:
            return _oauth_answer({"error": "invalid_client_metadata", "error_description": NOT_A_BODY}, 400)
        try:
            client = oauth.client_register(name=data.get("client_name", ""), redirect_uris=data.get("redirect_uris"))
        except oauth.OAuthError as exc:
            return _oauth_answer(exc.body(), exc.status)
        return _oauth_answer({"client_id": client.pk, "client_id_issued_at": int(client.created_at.timestamp()),
                              "client_name": client.name, "redirect_uris": client.redirect_uris,
                              "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                              "token_endpoint_auth_method": "none"}, 201)


def protected_resource_metadata(request):
    """RFC 9728: the MCP endpoint, and where its tokens come from."""
    return JsonResponse({"resource": f"{origin(request)}/v1/mcp", "authorization_servers": [origin(request)],
                         "scopes_supported": list(ALL_SCOPES), "bearer_methods_supported": ["header"],
                         "resource_name": "Platform MCP"})


def authorization_server_metadata(request):
    """RFC 8414."""
    base = origin(request)
    return JsonResponse({"issuer": base, "authorization_endpoint": f"{base}/v1/mcp/authorize",
                         "token_endpoint": f"{base}/v1/mcp/token", "registration_endpoint": f"{base}/v1/mcp/register",
                         "scopes_supported": list(ALL_SCOPES), "response_types_supported": ["code"],
                         "grant_types_supported": ["authorization_code", "refresh_token"],
                         "code_challenge_methods_supported": ["S256"],
                         "token_endpoint_auth_methods_supported": ["none"]})
