"""Invitations: create (and email), list, look up by token, accept, decline.

The token is 32 random bytes (URL-safe); only its SHA-256 is stored. An invitation is
usable once, for INVITATION_TTL_DAYS. Accepting needs a signed-in user whose email is
the invited address, verified (services/identity/email_verification.py; 403 `email_unverified` before that):
anyone else gets 404, so a leaked link tells nothing.
"""
import secrets
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import Conflict, Forbidden, NotFound, ValidationFailed
from config.ids import new_id
from platform_app.choices import Role
from platform_app.models import Invitation, Membership, ScimUser
from platform_app.services.teams.audit import audit_record
from platform_app.services.identity.email_verification import email_verified_require
from platform_app.services.identity.keys import sha256_hex


def invitation_link(raw_token: str) -> str:
    return f"{settings.INVITATION_LINK_BASE.rstrip('/')}/invitations/{raw_token}"


@transaction.atomic
def invitation_create(*, workspace, actor_membership: Membership, email: str, role: str,
                      ip: str = "") -> tuple[Invitation, str]:
    """Invite an address with a role and email the accept link; returns (invitation, plain token).

    An earlier pending invitation of the same address is revoked (the newest link wins).
    """
    email = email.strip().lower()
    if role not in Role.values:
        raise ValidationFailed(f"Unknown role `{role}`.", details={"role": [f"Must be one of {', '.join(Role.values)}."]})
    if role == Role.OWNER and actor_membership.role != Role.OWNER:
        raise Forbidden("Only an owner can invite an owner.", details={"role": actor_membership.role})
    if Membership.objects.filter(workspace=workspace, user__email__iexact=email).exists():
        raise Conflict("This person is already a member.", code="already_member", details={"email": [email]})
    now = timezone.now()
    Invitation.objects.filter(workspace=workspace, email=email, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.REVOKED, answered_at=now)
    raw = secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            invitation = Invitation.objects.create(
                id=new_id("inv"), workspace=workspace, email=email, role=role, token_hash=sha256_hex(raw),
                invited_by=actor_membership.user, expires_at=now + timedelta(days=settings.INVITATION_TTL_DAYS))
    except IntegrityError:
        raise Conflict("An invitation for this address is being created.", details={"email": [email]})
    audit_record(workspace=workspace, actor=actor_membership.user, action="invitation.created", target=invitation,
                 data={"email": email, "role": role}, ip=ip)
    inviter = actor_membership.user.name or actor_membership.user.email
    body = (f"{inviter} invited you to join the workspace \"{workspace.name}\" as {role}.\n\n"
            f"Accept: {invitation_link(raw)}\n\n"
            f"The link works once and expires on {invitation.expires_at:%Y-%m-%d %H:%M} UTC.\n")
    # Sent after commit: a rolled-back invitation never reaches anyone's inbox.
    transaction.on_commit(lambda: send_mail(f"Join {workspace.name}", body, None, [email]))
    return invitation, raw


def invitation_by_token(raw_token: str) -> Invitation:
    """The invitation a link names, whatever its state; 404 for an unknown token."""
    found = Invitation.objects.select_related("workspace", "invited_by").filter(
        token_hash=sha256_hex(raw_token or "")).first()
    if found is None:
        raise NotFound("No such invitation.")
    return found


def invitations_for_user(user):
    """Pending, unexpired invitations addressed to the user's email; 403 `email_unverified` until the account
    has verified that address (registering an address first proves nothing)."""
    email_verified_require(user)
    return Invitation.objects.select_related("workspace", "invited_by").filter(
        email__iexact=user.email, status=Invitation.Status.PENDING, expires_at__gt=timezone.now())


def _usable_by(raw_token: str, user) -> Invitation:
    email_verified_require(user)  # before the lookup: an unverified account learns nothing about the link
    invitation = invitation_by_token(raw_token)
    invitation = Invitation.objects.select_for_update().select_related("workspace").get(pk=invitation.pk)
    if invitation.email.lower() != (user.email or "").lower():
        raise NotFound("No such invitation.")
    if invitation.status != Invitation.Status.PENDING:
        raise Conflict(f"This invitation was already {invitation.status}.", code="invitation_used",
                       details={"status": invitation.status})
    if invitation.is_expired:
        raise Conflict("This invitation has expired; ask for a new one.", code="invitation_expired")
    return invitation


@transaction.atomic
def invitation_accept(*, raw_token: str, user, ip: str = "") -> Membership:
    """Join the workspace with the invited role (once)."""
    invitation = _usable_by(raw_token, user)
    if Membership.objects.filter(workspace=invitation.workspace, user=user).exists():
        raise Conflict("You are already a member of this workspace.", code="already_member")
    if ScimUser.objects.filter(workspace=invitation.workspace, user=user, active=False).exists():
        # the workspace's directory deactivated this account: only the directory lets it back in
        raise Forbidden("Your account is deactivated in this workspace's directory (SCIM); ask its administrator.",
                        code="scim_deprovisioned")
    try:
        with transaction.atomic():
            membership = Membership.objects.create(id=new_id("mem"), workspace=invitation.workspace, user=user,
                                                   role=invitation.role)
    except IntegrityError:
        raise Conflict("You are already a member of this workspace.", code="already_member")
    invitation.status = Invitation.Status.ACCEPTED
    invitation.answered_at = timezone.now()
    invitation.save(update_fields=["status", "answered_at"])
    audit_record(workspace=invitation.workspace, actor=user, action="invitation.accepted", target=invitation,
                 data={"email": invitation.email, "role": invitation.role}, ip=ip)
    return membership


@transaction.atomic
def invitation_decline(*, raw_token: str, user, ip: str = "") -> Invitation:
    """Turn the invitation down (once)."""
    invitation = _usable_by(raw_token, user)
    invitation.status = Invitation.Status.DECLINED
    invitation.answered_at = timezone.now()
    invitation.save(update_fields=["status", "answered_at"])
    audit_record(workspace=invitation.workspace, actor=user, action="invitation.declined", target=invitation,
                 data={"email": invitation.email}, ip=ip)
    return invitation
