"""Log-stream tokens, and whether an open stream may go on.

EventSource cannot send headers, so `POST /v1/auth/ws-token` hands out a token for the stream's `?token=`: an
RS256 JWT with audience `platform-stream`, valid JWT_STREAM_TTL_SECONDS (60), that names the credential it was
made with and carries its rights:

- `tid` (an API token) with `org`, the token's workspace binding: the stream is held to that workspace;
- `sid` (a sign-in session of the API);
- `dss` (the dashboard's cookie session): its session key, encrypted (the token travels in a URL);
- `scopes`: the maker's scopes (an API token's own scopes, not more).

Every use checks that credential again (revoked, expired, signed out, account disabled: 401), so a stream token
dies with it; a token naming none is refused. An open stream, however it was authenticated, runs
`stream_access_lost` every LOG_STREAM_RECHECK_SECONDS and ends when the credential is gone or the user is no
longer a member of the stream's workspace.
"""
import base64
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.contrib.auth import get_user as django_session_user
from django.utils.crypto import salted_hmac

from config.errors import Unauthenticated
from platform_app.models import Membership
from platform_app.services.identity.auth import session_active
from platform_app.services.identity.keys import token_issue, token_verify
from platform_app.services.identity.tokens import api_token_active
from platform_app.services.mcp.oauth import mcp_token_active

MCP_TOKEN_ID = "mcpt_"  # the id prefix of an MCP client's token (models/mcp.py)

AUDIENCE = "platform-stream"


@dataclass(frozen=True)
class Credential:
    """What a request proved itself with, by id, so it can be checked again later: an API token, a sign-in
    session, or the dashboard's cookie session (its key)."""

    user_id: str
    token_id: str | None = None
    session_id: str | None = None
    cookie_session_key: str | None = None


@dataclass(frozen=True)
class StreamGrant:
    """What a valid stream token acts as."""

    user: object
    scopes: frozenset
    credential: Credential
    token: object = None  # the ApiToken row (its workspace binding holds the stream to that workspace)
    session: object = None


def _cipher() -> Fernet:
    key = salted_hmac("platform_app.stream_tokens", "dashboard-session", algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(key))


def stream_token_issue(*, user, scopes, credential: Credential, workspace_id: str | None = None,
                       ttl_seconds: int | None = None) -> tuple[str, int]:
    """A stream token for `user` acting with `scopes` through `credential` (bound to `workspace_id`, if any)."""
    claims = {"scopes": sorted(scopes), "org": workspace_id}
    if credential.token_id:
        claims["tid"] = credential.token_id
    elif credential.session_id:
        claims["sid"] = credential.session_id
    elif credential.cookie_session_key:
        claims["dss"] = _cipher().encrypt(credential.cookie_session_key.encode()).decode()
    else:
        raise Unauthenticated("A stream token needs a credential to depend on.", code="invalid_token")
    return token_issue(subject=str(user.pk), audience=AUDIENCE,
                       ttl_seconds=ttl_seconds or settings.JWT_STREAM_TTL_SECONDS, **claims)


def _cookie_session_user(session_key: str):
    """The user a dashboard session still signs in (Django's own checks: expiry, password change), or None."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)
    user = django_session_user(SimpleNamespace(session=store))
    return user if user.is_authenticated else None


def credential_check(credential: Credential):
    """(user, ApiToken or None, AuthSession or None) while the credential is live; 401 otherwise."""
    token = session = None
    if credential.token_id:  # an API token's, or an MCP client's (services/mcp/oauth.py)
        token = (mcp_token_active(token_id=credential.token_id) if credential.token_id.startswith(MCP_TOKEN_ID)
                 else api_token_active(token_id=credential.token_id))  # 401 token_revoked / token_expired
        user = token.user
    elif credential.session_id:
        session = session_active(credential.session_id)  # 401 token_revoked
        user = session.user
    elif credential.cookie_session_key:
        user = _cookie_session_user(credential.cookie_session_key)
        if user is None:
            raise Unauthenticated("The dashboard session has ended.", code="token_revoked")
    else:
        raise Unauthenticated("The stream token names no credential.", code="invalid_token")
    if str(user.pk) != str(credential.user_id) or not user.is_active:
        raise Unauthenticated("The credential no longer belongs to this user.", code="token_revoked")
    return user, token, session


def stream_token_authenticate(raw: str) -> StreamGrant:
    """What a `?token=` stream token acts as, after checking its signature, its lifetime and its credential."""
    claims = token_verify(raw, audience=AUDIENCE)
    dss = claims.get("dss")
    try:
        cookie_key = _cipher().decrypt(dss.encode()).decode() if isinstance(dss, str) else None
    except InvalidToken:
        raise Unauthenticated("The stream token is invalid.", code="invalid_token")
    credential = Credential(user_id=claims["sub"], token_id=claims.get("tid"), session_id=claims.get("sid"),
                            cookie_session_key=cookie_key)
    user, token, session = credential_check(credential)
    scopes = frozenset(claims.get("scopes") or ())
    if token is not None:
        if claims.get("org") != token.workspace_id:
            raise Unauthenticated("The stream token does not match its API token.", code="invalid_token")
        scopes &= frozenset(token.scopes)  # never more than the API token holds
    return StreamGrant(user=user, scopes=scopes, credential=credential, token=token, session=session)


def stream_access_lost(*, credential: Credential, workspace_id: str) -> str | None:
    """Why an open stream of `workspace_id` must end now (an error code), or None while it may go on."""
    try:
        user, _, _ = credential_check(credential)
    except Unauthenticated as exc:
        return exc.code
    if not Membership.objects.filter(user=user, workspace_id=workspace_id).exists():
        return "not_a_member"
    return None
