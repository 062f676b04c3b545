"""How a `/v1` request proves who it is: bearer API token, bearer access JWT, or
the dashboard session cookie (with CSRF)."""
from dataclasses import dataclass, field

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header

from config.errors import Unauthenticated
from platform_app.choices import Scope
from platform_app.services.identity.auth import session_active
from platform_app.services.identity.keys import token_verify
from platform_app.services.identity.stream_tokens import Credential, stream_token_authenticate
from platform_app.services.identity.tokens import TOKEN_PREFIX, api_token_authenticate
from platform_app.services.mcp.oauth import ACCESS_PREFIX as MCP_ACCESS_PREFIX
from platform_app.services.mcp.oauth import mcp_token_authenticate


@dataclass
class Actor:
    """What a request acts as: its scopes and, for a token, its workspace binding."""

    type: str  # "session" | "api_token" | "mcp_token" | "stream" (a `?token=` from /v1/auth/ws-token, log streams only)
    scopes: set = field(default_factory=set)
    token: object = None
    session: object = None
    credential: object = None  # a stream token's: what it was made with (services/identity/stream_tokens.py)

    @property
    def workspace_id(self):
        return self.token.workspace_id if self.token is not None else None


FULL = {Scope.ADMIN.value}


class BearerAuthentication(BaseAuthentication):
    """`Authorization: Bearer svc_...` (API token), `Bearer mcpa_...` (MCP OAuth token) or `Bearer <RS256 access
    JWT>`."""

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != b"bearer":
            return None
        if len(header) != 2:
            raise Unauthenticated("Malformed Authorization header; expected `Bearer <token>`.")
        raw = header[1].decode(errors="replace")
        if raw.startswith(TOKEN_PREFIX):
            token = api_token_authenticate(raw)
            return token.user, Actor("api_token", set(token.scopes), token=token)
        if raw.startswith(MCP_ACCESS_PREFIX):  # an MCP client's OAuth token: scopes and binding as an API token's
            token = mcp_token_authenticate(raw)
            return token.user, Actor("mcp_token", set(token.scopes), token=token)
        claims = token_verify(raw, audience="platform")
        session = session_active(claims.get("sid", ""))
        if str(session.user_id) != claims["sub"]:
            raise Unauthenticated("The access token does not match its session.", code="invalid_token")
        return session.user, Actor("session", set(FULL), session=session)

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class StreamTokenAuthentication(BaseAuthentication):
    """`?token=` from `POST /v1/auth/ws-token`, for the log stream only (EventSource cannot send headers). The
    token acts with its maker's scopes and workspace binding, and only while its maker's credential lives."""

    def authenticate(self, request):
        raw = request.query_params.get("token")
        if not raw:
            return None
        grant = stream_token_authenticate(raw)
        return grant.user, Actor("stream", set(grant.scopes), token=grant.token, session=grant.session,
                                 credential=grant.credential)

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def request_credential(request) -> Credential:
    """What an authenticated request proved itself with, to be checked again later (stream tokens, open streams)."""
    actor = request.auth if isinstance(request.auth, Actor) else None
    user_id = str(request.user.pk)
    if actor is not None and actor.credential is not None:
        return actor.credential
    if actor is not None and actor.token is not None:
        return Credential(user_id=user_id, token_id=actor.token.pk)
    if actor is not None and actor.session is not None:
        return Credential(user_id=user_id, session_id=actor.session.pk)
    return Credential(user_id=user_id, cookie_session_key=request._request.session.session_key)


class CookieSessionAuthentication(SessionAuthentication):
    """The dashboard's Django session cookie; writes need the CSRF token."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        return result[0], Actor("session", set(FULL))


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "platform_app.authentication.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                "description": "An API token `svc_...` or an access JWT from sign-in."}
