"""A workspace's single sign-on: its OpenID Connect provider (the social sign-in's OIDC code, PKCE and nonce,
through the outbound guard), who may sign in through it, the SCIM token, and the sessions it starts.

Accounts (docs/org.md, "Who signs in"):
- an identity (issuer, subject) already linked signs into its account;
- a signed-in user who starts the flow links the identity to their own account (how existing members move to SSO);
- otherwise the provider's email decides: no account with it yet → one is created (just in time) when its domain is
  one of `allowedDomains`; an account created for this workspace by SCIM is linked; any other existing account is
  409 `sso_link_required` (a workspace's provider never takes over an account it did not create);
- a member is created with `defaultRole` when the email's domain is allowed; a member deprovisioned by SCIM is
  refused (403 `account_deprovisioned`).
"""
import re
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import ApplicationError, Conflict, Forbidden, NotFound, Unauthenticated, ValidationFailed
from config.outbound import OutboundRefused, outbound_check
from platform_app.choices import Role
from platform_app.models import (Membership, ScimGroup, ScimUser, SsoIdentity, SsoSession, Workspace,
                                 WorkspaceSso)
from platform_app.providers.git_hosts import ProviderUser
from platform_app.providers.oidc import GuardedOidcClient, discovery_url
from platform_app.services.identity.email_verification import email_verification_mail
from platform_app.services.env.crypto import decrypt, encrypt
from platform_app.services.identity.auth import IssuedTokens, session_start
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.identity.oauth_state import state_consume, state_start
from platform_app.services.org.growth_events import SIGNED_UP, growth_event_record
from platform_app.services.teams.audit import audit_record

User = get_user_model()

SCIM_TOKEN_PREFIX = "scim_"
STATE_PROVIDER = "sso"
PURPOSE_API, PURPOSE_PAGE = "sso", "sso-page"
SCOPE = "openid email profile"
ASSIGNABLE_ROLES = tuple(r for r in Role.values if r != Role.OWNER)
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


# Settings ---------------------------------------------------------------------------------------

def sso_settings(*, workspace) -> WorkspaceSso | None:
    return WorkspaceSso.objects.filter(workspace=workspace).first()


def sso_redirect_uri(workspace, *, page: bool = False) -> str:
    """Where the provider sends the browser back: register both at the provider. By workspace id, so a renamed
    slug does not break them."""
    base = settings.SITE_URL.rstrip("/")
    return f"{base}/sso/{workspace.pk}/callback" if page else f"{base}/v1/auth/sso/{workspace.pk}/callback"


def scim_base_url() -> str:
    return f"{settings.SITE_URL.rstrip('/')}/scim/v2"


def sso_describe(*, workspace, row: WorkspaceSso | None = None) -> dict:
    """What the API and the page show (never the client secret nor the SCIM token)."""
    row = row if row is not None else sso_settings(workspace=workspace)
    return {
        "enabled": bool(row and row.enabled), "issuer": row.issuer if row else "",
        "client_id": row.client_id if row else "", "client_secret_set": bool(row and row.client_secret_encrypted),
        "allowed_domains": list(row.allowed_domains) if row else [], "require_sso": bool(row and row.require_sso),
        "default_role": row.default_role if row else Role.VIEWER, "scim_enabled": bool(row and row.scim_enabled),
        "scim_token_prefix": (row.scim_token_prefix or None) if row else None,
        "scim_token_created_at": row.scim_token_created_at if row else None,
        "scim_base_url": scim_base_url(),
        "redirect_uris": [sso_redirect_uri(workspace), sso_redirect_uri(workspace, page=True)],
        "sign_in_url": f"/v1/auth/sso/{workspace.slug}/start",
    }


def _domains(value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(d, str) for d in value):
        raise ValidationFailed("allowedDomains must be a list of domain names.",
                               details={"allowedDomains": ["A list of domain names."]})
    domains = list(dict.fromkeys(d.strip().lower().lstrip("@").rstrip(".") for d in value if d.strip()))
    bad = [d for d in domains if not _DOMAIN.match(d)]
    if bad:
        raise ValidationFailed(f"Not a domain name: {bad[0][:100]}.", details={"allowedDomains": ["Not a domain name."]})
    if len(domains) > settings.SSO_MAX_ALLOWED_DOMAINS:
        raise ValidationFailed(f"At most {settings.SSO_MAX_ALLOWED_DOMAINS} domains.",
                               details={"allowedDomains": [f"At most {settings.SSO_MAX_ALLOWED_DOMAINS}."]})
    return domains


def _issuer(value: str, *, fetch: bool) -> str:
    """An issuer the outbound guard allows (400 naming `issuer` otherwise) and, when `fetch`, whose discovery
    document answers and names it."""
    issuer = (value or "").strip().rstrip("/")
    if not issuer:
        raise ValidationFailed("issuer is required to enable single sign-on.", details={"issuer": ["Required."]})
    try:
        outbound_check(discovery_url(issuer), purpose="sso")
    except OutboundRefused as exc:
        raise ValidationFailed(exc.message, code=exc.code, details={"issuer": [exc.message]})
    if fetch:
        try:
            GuardedOidcClient({"issuer": issuer, "client_id": "", "client_secret": "", "scope": SCOPE}).discovery()
        except ApplicationError as exc:
            code = exc.code if isinstance(exc, OutboundRefused) else "issuer_invalid"
            raise ValidationFailed(f"The issuer's discovery document could not be used: {exc.message}", code=code,
                                   details={"issuer": [exc.message]})
    return issuer


def sso_update(*, workspace, actor, enabled: bool, issuer: str, client_id: str, allowed_domains: list,
               require_sso: bool, client_secret: str | None = None, default_role: str | None = None,
               scim_enabled: bool | None = None, ip: str = "") -> WorkspaceSso:
    """Replace the settings (PUT). Enabling needs an issuer whose discovery document answers (checked now, through
    the outbound guard), a client id and a secret (given now or kept from before); `require_sso` needs `enabled`."""
    domains = _domains(allowed_domains)
    client_id = (client_id or "").strip()
    if default_role is not None and default_role not in ASSIGNABLE_ROLES:
        raise ValidationFailed(f"defaultRole must be one of {', '.join(ASSIGNABLE_ROLES)}.",
                               details={"defaultRole": [f"One of {', '.join(ASSIGNABLE_ROLES)}."]})
    if require_sso and not enabled:
        raise ValidationFailed("requireSso needs single sign-on enabled.", details={"requireSso": ["Needs enabled."]})
    if issuer or enabled:
        issuer = _issuer(issuer, fetch=enabled)
    current = sso_settings(workspace=workspace)
    if enabled:
        if not client_id:
            raise ValidationFailed("clientId is required to enable single sign-on.", details={"clientId": ["Required."]})
        if not client_secret and not (current and current.client_secret_encrypted):
            raise ValidationFailed("clientSecret is required to enable single sign-on.",
                                   details={"clientSecret": ["Required."]})
    return _sso_save(workspace=workspace, actor=actor, ip=ip, enabled=enabled, issuer=issuer, client_id=client_id,
                     client_secret=client_secret, allowed_domains=domains, require_sso=require_sso,
                     default_role=default_role, scim_enabled=scim_enabled)


@transaction.atomic
def _sso_save(*, workspace, actor, ip, client_secret, default_role, scim_enabled, **values) -> WorkspaceSso:
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    row = sso_settings(workspace=workspace) or WorkspaceSso(workspace=workspace)
    if values["issuer"].rstrip("/") != row.issuer.rstrip("/") and row.pk:
        values.setdefault("client_secret_encrypted", "")  # a secret belongs to its provider
    for name, value in values.items():
        setattr(row, name, value)
    if client_secret:
        row.client_secret_encrypted = encrypt(client_secret)
    if default_role is not None:
        row.default_role = default_role
    if scim_enabled is not None:
        row.scim_enabled = scim_enabled
    if row.enabled and not row.client_secret_encrypted:
        raise ValidationFailed("clientSecret is required for a new issuer.", details={"clientSecret": ["Required."]})
    row.save()
    audit_record(workspace=workspace, actor=actor, action="sso.updated", target=row, ip=ip, data={
        "enabled": row.enabled, "issuer": row.issuer, "clientId": row.client_id, "allowedDomains": row.allowed_domains,
        "requireSso": row.require_sso, "defaultRole": row.default_role, "scimEnabled": row.scim_enabled,
        "secretChanged": bool(client_secret)})
    return row


@transaction.atomic
def sso_delete(*, workspace, actor, ip: str = "") -> None:
    """Remove single sign-on and SCIM: the settings, the SCIM token, linked identities, SSO session marks and SCIM's
    user and group records. Members stay members; "require SSO" ends with it."""
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    counts = {"identities": SsoIdentity.objects.filter(workspace=workspace).delete()[0],
              "scimUsers": ScimUser.objects.filter(workspace=workspace).delete()[0],
              "scimGroups": ScimGroup.objects.filter(workspace=workspace).delete()[0]}
    SsoSession.objects.filter(workspace=workspace).delete()
    deleted, _ = WorkspaceSso.objects.filter(workspace=workspace).delete()
    if deleted:
        audit_record(workspace=workspace, actor=actor, action="sso.deleted", target=workspace, data=counts, ip=ip)


@transaction.atomic
def scim_token_rotate(*, workspace, actor, ip: str = "") -> str:
    """A new SCIM token (the plain value, shown once); the old one stops working at once. Turns SCIM on. Owners
    only: the token adds, changes and removes members for the whole directory."""
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    if not Membership.objects.filter(workspace=workspace, user=actor, role=Role.OWNER).exists():
        raise Forbidden("Only an owner can create or replace the SCIM token.")
    row = sso_settings(workspace=workspace) or WorkspaceSso(workspace=workspace)
    raw = SCIM_TOKEN_PREFIX + secrets.token_urlsafe(32)
    row.scim_token_hash, row.scim_token_prefix = sha256_hex(raw), raw[:12]
    row.scim_token_created_at, row.scim_enabled = timezone.now(), True
    row.save()
    audit_record(workspace=workspace, actor=actor, action="sso.scim_token_created", target=row, ip=ip,
                 data={"prefix": row.scim_token_prefix})
    return raw


def scim_authenticate(raw: str) -> WorkspaceSso | None:
    """The settings whose live SCIM token this is (SCIM enabled), or None."""
    if not raw or not raw.startswith(SCIM_TOKEN_PREFIX):
        return None
    return (WorkspaceSso.objects.select_related("workspace")
            .filter(scim_token_hash=sha256_hex(raw), scim_enabled=True).first())


# Sign-in ----------------------------------------------------------------------------------------

def _enabled_for(ref: str) -> tuple[Workspace, WorkspaceSso]:
    row = (WorkspaceSso.objects.select_related("workspace").filter(enabled=True)
           .filter(Q(workspace_id=ref) | Q(workspace__slug=ref)).first())
    if row is None:
        raise NotFound("This workspace has no single sign-on.", code="sso_not_enabled")
    return row.workspace, row


def sso_client(row: WorkspaceSso) -> GuardedOidcClient:
    return GuardedOidcClient({"issuer": row.issuer, "client_id": row.client_id,
                              "client_secret": decrypt(row.client_secret_encrypted), "scope": SCOPE})


def sso_sign_in_start(*, workspace_ref: str, page: bool = False, user=None, return_to: str = ""):
    """(provider URL, state, state row) for the workspace's sign-in; with a signed-in `user`, the identity is linked
    to them at the callback. The caller sets the row's browser binding cookie (oauth_state.state_cookie_set)."""
    workspace, row = _enabled_for(workspace_ref)
    client = sso_client(row)
    client.discovery()  # the provider answers before anything is written
    state_row, state = state_start(purpose=PURPOSE_PAGE if page else PURPOSE_API, provider=STATE_PROVIDER,
                                   user=user, workspace=workspace, return_to=return_to, pkce=True)
    url = client.authorize_url(state=state, redirect_uri=sso_redirect_uri(workspace, page=page),
                               nonce=state_row.nonce, code_verifier=state_row.code_verifier)
    return url, state, state_row


def sso_sign_in_finish(*, workspace_ref: str, state: str, binding: str, code: str, error: str = "",
                       page: bool = False, ip: str = ""):
    """The callback: consume the state (bound to this browser), exchange the code, verify the ID token, find or
    create the account and its membership. Returns (user, workspace, state row)."""
    state_row = state_consume(value=state, purpose=PURPOSE_PAGE if page else PURPOSE_API, provider=STATE_PROVIDER,
                              binding=binding)
    workspace, row = _enabled_for(workspace_ref)
    if state_row.workspace_id != workspace.pk:
        raise ValidationFailed("The OAuth state is not valid.", code="invalid_state")
    if error:
        raise ApplicationError(f"The provider answered: {error[:200]}", code="provider_denied", status=400)
    info = sso_client(row).sign_in(code=code, redirect_uri=sso_redirect_uri(workspace, page=page),
                                   code_verifier=state_row.code_verifier, nonce=state_row.nonce)
    user = sso_account_for(workspace=workspace, row=row, info=info, link_user=state_row.user, ip=ip)
    return user, workspace, state_row


def _domain_allowed(email: str, domains: list[str]) -> bool:
    return bool(email) and "@" in email and email.rsplit("@", 1)[1].lower() in domains


@transaction.atomic
def sso_account_for(*, workspace, row: WorkspaceSso, info: ProviderUser, link_user=None, ip: str = "") -> "User":
    """The account the provider's identity signs into, and its membership (module docstring)."""
    identity = (SsoIdentity.objects.select_for_update().select_related("user")
                .filter(workspace=workspace, issuer=row.issuer, subject=info.subject).first())
    if identity is not None:
        if link_user is not None and identity.user_id != link_user.pk:
            raise Conflict("This identity is linked to another account.", code="identity_taken")
        user = identity.user
    else:
        user = link_user or _account_by_email(workspace=workspace, row=row, info=info)
        try:
            with transaction.atomic():
                identity = SsoIdentity.objects.create(workspace=workspace, user=user, issuer=row.issuer,
                                                      subject=info.subject, email=info.email)
        except IntegrityError:  # the same identity's first sign-in, twice at once
            identity = SsoIdentity.objects.get(workspace=workspace, issuer=row.issuer, subject=info.subject)
            if identity.user_id != user.pk:
                raise Conflict("This identity is linked to another account.", code="identity_taken")
        audit_record(workspace=workspace, actor=user, action="sso.identity_linked", target=identity, ip=ip,
                     data={"subject": info.subject, "email": info.email, "byUser": link_user is not None})
    if not user.is_active:
        raise Unauthenticated("The account is disabled.", code="account_disabled")
    scim = ScimUser.objects.filter(workspace=workspace, user=user).first()
    if scim is not None and not scim.active:
        raise Forbidden("Your access to this workspace was removed by its directory.", code="account_deprovisioned")
    if not Membership.objects.filter(workspace=workspace, user=user).exists():
        if not _domain_allowed(info.email, row.allowed_domains):
            raise Forbidden("Your email's domain may not join this workspace through single sign-on; ask an admin "
                            "for an invitation.", code="sso_domain_not_allowed")
        try:
            with transaction.atomic():
                membership = Membership.objects.create(workspace=workspace, user=user, role=row.default_role)
        except IntegrityError:
            membership = None  # joined by a concurrent sign-in
        if membership is not None:
            audit_record(workspace=workspace, actor=user, action="member.joined_via_sso", target=membership, ip=ip,
                         data={"user": user.pk, "email": user.email, "role": membership.role})
    SsoIdentity.objects.filter(pk=identity.pk).update(last_sign_in_at=timezone.now(), email=info.email)
    return user


def _account_by_email(*, workspace, row: WorkspaceSso, info: ProviderUser) -> "User":
    email = (info.email or "").strip().lower()
    if not email:
        raise Conflict("The identity provider did not share an email address.", code="email_missing")
    if info.claims.get("email_verified") is False:
        raise Conflict("The identity provider says this email address is not verified.", code="email_unverified")
    existing = User.objects.filter(email__iexact=email).first()
    if existing is not None:
        if ScimUser.objects.filter(workspace=workspace, user=existing, account_created=True).exists():
            return existing  # created for this workspace by its directory
        raise Conflict("An account with this email already exists: sign in to it, then start this workspace's "
                       "single sign-on while signed in to link it.", code="sso_link_required")
    if not _domain_allowed(email, row.allowed_domains):
        raise Forbidden("Your email's domain may not sign up through this workspace's single sign-on.",
                        code="sso_domain_not_allowed")
    name = str(info.claims.get("name") or info.login or "")[:150]
    try:
        with transaction.atomic():
            user = User.objects.create_user(email=email, password=None, name=name)
    except IntegrityError:
        raise Conflict("An account with this email was just created; sign in again.", code="email_taken")
    # unverified: a workspace's identity provider vouches for its members in that workspace, not for the address
    # elsewhere (invitations from other workspaces wait for the emailed link, docs/auth.md)
    email_verification_mail(user)
    growth_event_record(event=SIGNED_UP, user=user, properties={"via": "sso", "workspace": workspace.pk})
    return user


@transaction.atomic
def sso_session_start(*, user, workspace, ip: str = "", user_agent: str = "") -> IssuedTokens:
    """An API session that counts as signed in through the workspace's SSO ("require SSO")."""
    issued = session_start(user=user, ip=ip, user_agent=user_agent)
    SsoSession.objects.create(session=issued.session, workspace=workspace)
    return issued
