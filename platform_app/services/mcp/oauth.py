"""The MCP endpoint's authorization server: OAuth 2.1 with PKCE (S256 only), as the MCP specification's
authorization section describes (docs/mcp.md).

- A client registers itself (RFC 7591 dynamic registration: its redirect URIs; public clients, no secret).
- `/v1/mcp/authorize` shows a signed-in user a consent page; approving makes a single-use code (10 minutes, kept
  as a hash) bound to the client, the redirect URI, the PKCE challenge, the scopes the user left ticked (of those asked)
  and a workspace binding.
  A redirect URI must be one the client registered, or a loopback one (`127.0.0.1`, `[::1]`, `localhost`) whose
  path it registered, any port (RFC 8252). A bad request there is answered without redirecting anywhere.
- `/v1/mcp/token` exchanges the code (with the PKCE verifier) for an access token (`mcpa_`) and a refresh token
  (`mcpr_`), and rotates them on refresh. A code used twice is `invalid_grant`, and the tokens the first use made
  are revoked (RFC 6749 §4.1.2).
- Access tokens carry scopes and a workspace binding exactly like API tokens; every route and every MCP tool
  checks them the same way.

Errors are OAuth's own `{"error", "error_description"}` (`OAuthError`).
"""
import base64
import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import NotFound, Unauthenticated
from platform_app.models import McpAuthorizationCode, McpClient, McpToken, Workspace
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.identity.scopes import ALL_SCOPES

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
ACCESS_PREFIX, REFRESH_PREFIX = "mcpa_", "mcpr_"


class OAuthError(Exception):
    def __init__(self, error: str, description: str, status: int = 400):
        self.error, self.description, self.status = error, description, status
        super().__init__(description)

    def body(self) -> dict:
        return {"error": self.error, "error_description": self.description}


def _redirect_ok(uri: str) -> bool:
    parts = urlsplit(uri or "")
    return (not parts.fragment and bool(parts.hostname) and
            (parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK)))


@transaction.atomic
def client_register(*, name: str, redirect_uris) -> McpClient:
    """A public client (no secret): its name and redirect URIs (https, or http to a loopback address)."""
    if not isinstance(redirect_uris, list) or not redirect_uris or len(redirect_uris) > 10 or not all(
            isinstance(u, str) and len(u) <= 2000 and _redirect_ok(u) for u in redirect_uris):
        raise OAuthError("invalid_redirect_uri", "redirect_uris: 1 to 10 https URIs, or http to 127.0.0.1, [::1] "
                                                 "or localhost, without a fragment.")
    return McpClient.objects.create(name=str(name or "")[:200], redirect_uris=redirect_uris)


def _client(client_id: str) -> McpClient:
    client = McpClient.objects.filter(pk=client_id or "").first()
    if client is None:
        raise OAuthError("invalid_client", "Unknown client_id: register the client first.", status=401)
    return client


def redirect_allowed(client: McpClient, uri: str) -> bool:
    if uri in client.redirect_uris:
        return True
    parts = urlsplit(uri or "")
    if parts.scheme != "http" or parts.hostname not in LOOPBACK or parts.fragment:
        return False
    return any(urlsplit(r).hostname in LOOPBACK and urlsplit(r).path == parts.path for r in client.redirect_uris)


def scopes_parse(value: str | None) -> list[str]:
    """OAuth's space-separated scopes (commas too); `read` when none is asked for."""
    items = [s for s in (value or "").replace(",", " ").split() if s]
    unknown = sorted(set(items) - set(ALL_SCOPES))
    if unknown:
        raise OAuthError("invalid_scope", f"Unknown scope(s): {', '.join(unknown)}; allowed: {', '.join(ALL_SCOPES)}.")
    return sorted(set(items) or {"read"}, key=ALL_SCOPES.index)


def authorize_check(params) -> dict:
    """The checked request of `/v1/mcp/authorize`; OAuthError (shown, never redirected) when it is not one."""
    if params.get("response_type", "code") != "code":
        raise OAuthError("unsupported_response_type", "Only response_type=code is supported.")
    client = _client(params.get("client_id", ""))
    redirect_uri = params.get("redirect_uri", "")
    if not redirect_allowed(client, redirect_uri):
        raise OAuthError("invalid_request", "redirect_uri is not one this client registered.")
    challenge = params.get("code_challenge", "")
    if params.get("code_challenge_method") != "S256" or not 43 <= len(challenge) <= 128:
        raise OAuthError("invalid_request", "A PKCE code_challenge with code_challenge_method=S256 is required.")
    return {"client": client, "redirect_uri": redirect_uri, "code_challenge": challenge,
            "scopes": scopes_parse(params.get("scope")), "state": params.get("state", "")[:500],
            "resource": params.get("resource", "")[:2000]}


@transaction.atomic
def authorization_code_create(*, user, request: dict, workspace: Workspace | None) -> str:
    code = secrets.token_urlsafe(32)
    McpAuthorizationCode.objects.create(
        code_hash=sha256_hex(code), client=request["client"], user=user, workspace=workspace,
        redirect_uri=request["redirect_uri"], code_challenge=request["code_challenge"], scopes=request["scopes"],
        resource=request["resource"], expires_at=timezone.now() + timedelta(seconds=settings.MCP_CODE_TTL_SECONDS))
    return code


def _pkce(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _issue(*, client, user, workspace, scopes) -> tuple[McpToken, dict]:
    access, refresh = ACCESS_PREFIX + secrets.token_urlsafe(32), REFRESH_PREFIX + secrets.token_urlsafe(32)
    now = timezone.now()
    token = McpToken.objects.create(
        client=client, user=user, workspace=workspace, scopes=scopes, access_hash=sha256_hex(access),
        refresh_hash=sha256_hex(refresh), expires_at=now + timedelta(seconds=settings.MCP_ACCESS_TTL_SECONDS),
        refresh_expires_at=now + timedelta(days=settings.MCP_REFRESH_TTL_DAYS))
    return token, {"access_token": access, "token_type": "Bearer", "expires_in": settings.MCP_ACCESS_TTL_SECONDS,
                   "refresh_token": refresh, "scope": " ".join(scopes)}


def token_exchange(*, code: str, client_id: str, redirect_uri: str, code_verifier: str) -> dict:
    client = _client(client_id)
    with transaction.atomic():
        grant = McpAuthorizationCode.objects.select_for_update().filter(code_hash=sha256_hex(code or "")).first()
        if grant is None or grant.client_id != client.pk:
            raise OAuthError("invalid_grant", "Unknown authorization code.")
        replayed = grant.used_at is not None
        if replayed:  # what the first use made is revoked too (committed, unlike the refusal)
            McpToken.objects.filter(client=client, user=grant.user, created_at__gte=grant.used_at).update(
                revoked_at=timezone.now())
        else:
            _grant_check(grant, redirect_uri=redirect_uri, code_verifier=code_verifier)
            grant.used_at = timezone.now()
            grant.save(update_fields=["used_at"])
            return _issue(client=client, user=grant.user, workspace=grant.workspace, scopes=grant.scopes)[1]
    raise OAuthError("invalid_grant", "The authorization code was already used.")


def _grant_check(grant: McpAuthorizationCode, *, redirect_uri: str, code_verifier: str):
    if grant.expires_at <= timezone.now():
        raise OAuthError("invalid_grant", "The authorization code expired.")
    if grant.redirect_uri != redirect_uri:
        raise OAuthError("invalid_grant", "redirect_uri differs from the one the code was issued for.")
    if not code_verifier or not secrets.compare_digest(_pkce(code_verifier), grant.code_challenge):
        raise OAuthError("invalid_grant", "The PKCE code_verifier does not match the code_challenge.")


@transaction.atomic
def token_refresh(*, refresh_token: str, client_id: str) -> dict:
    """A new pair for a valid refresh token; the old pair stops working (rotation)."""
    client = _client(client_id)
    token = McpToken.objects.select_for_update().filter(refresh_hash=sha256_hex(refresh_token or ""),
                                                        client=client).first()
    if token is None or token.revoked_at is not None or token.refresh_expires_at <= timezone.now():
        raise OAuthError("invalid_grant", "The refresh token is unknown, revoked or expired.")
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    return _issue(client=client, user=token.user, workspace=token.workspace, scopes=token.scopes)[1]


def mcp_grants_of(user) -> list[McpToken]:
    """The MCP clients a user lets act for them now: each live token pair (its refresh token still usable)."""
    return list(McpToken.objects.select_related("client", "workspace").filter(
        user=user, revoked_at__isnull=True, refresh_expires_at__gt=timezone.now()).order_by("-created_at"))


def mcp_grant_revoke(*, user, token_id: str) -> None:
    """Disconnect a client: its access and refresh tokens stop working at once; 404 for another user's."""
    if not McpToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        raise NotFound("No such connected agent.")


def mcp_token_authenticate(raw: str) -> McpToken:
    """The token an `Authorization: Bearer mcpa_...` names, if it is valid now."""
    token = _live(McpToken.objects.select_related("user").filter(access_hash=sha256_hex(raw or "")).first())
    McpToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def mcp_token_active(*, token_id: str) -> McpToken:
    """The token by id while it is valid, or 401: what depends on it (a stream token, an open stream) asks again."""
    return _live(McpToken.objects.select_related("user").filter(pk=token_id).first())


def _live(token: McpToken | None) -> McpToken:
    if token is None:
        raise Unauthenticated("Unknown MCP access token.", code="invalid_token")
    if token.revoked_at is not None:
        raise Unauthenticated("The MCP access token was revoked.", code="token_revoked")
    if token.expires_at <= timezone.now():
        raise Unauthenticated("The MCP access token expired; refresh it.", code="token_expired")
    if not token.user.is_active:
        raise Unauthenticated("The account is disabled.", code="token_revoked")
    return token
