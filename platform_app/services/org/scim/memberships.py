"""Memberships follow the directory: an active User is a member with the role its groups name; an inactive or
deleted one is removed, with its tokens, SSO sessions and pending invitations to the workspace. Owners are never
changed or removed by SCIM."""
from django.utils import timezone

from platform_app.choices import Role
from platform_app.models import AuthSession, Invitation, Membership, ScimUser, Workspace, WorkspaceSso
from platform_app.services.identity.tokens import api_tokens_revoke_for_member
from platform_app.services.org.scim.common import ScimError
from platform_app.services.teams.audit import audit_record

ROLE_PRIORITY = (Role.ADMIN, Role.DEVELOPER, Role.BILLING, Role.VIEWER)


def workspace_lock(workspace) -> WorkspaceSso | None:
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    return WorkspaceSso.objects.filter(workspace=workspace).first()


def _group_role(scim_user: ScimUser) -> str | None:
    names = {g.display_name.strip().lower() for g in scim_user.groups.all()}
    return next((role.value for role in ROLE_PRIORITY if role.value in names), None)


def membership_sync(*, workspace, sso: WorkspaceSso | None, scim_user: ScimUser) -> None:
    """Bring the account's membership in line with the record: present with its role when active, gone (and the
    access it gave revoked) when not."""
    membership = (Membership.objects.select_for_update().select_related("user")
                  .filter(workspace=workspace, user_id=scim_user.user_id).first())
    if not scim_user.active:
        deprovision(workspace=workspace, user=scim_user.user, membership=membership)
        return
    default_role = sso.default_role if sso else Role.VIEWER
    role = _group_role(scim_user)
    if membership is None:
        membership = Membership.objects.create(workspace=workspace, user_id=scim_user.user_id,
                                               role=role or default_role)
        audit_record(workspace=workspace, actor=None, action="member.provisioned", target=membership,
                     data={"user": scim_user.user_id, "role": membership.role, "scimId": scim_user.pk})
        managed = True
    else:
        managed = scim_user.role_managed or role is not None
        target = role or (default_role if scim_user.role_managed else None)
        if membership.role != Role.OWNER and target and target != membership.role:
            audit_record(workspace=workspace, actor=None, action="member.role_changed", target=membership,
                         data={"user": scim_user.user_id, "from": membership.role, "to": target, "by": "scim"})
            membership.role = target
            membership.save(update_fields=["role"])
    if managed != scim_user.role_managed:
        ScimUser.objects.filter(pk=scim_user.pk).update(role_managed=managed)
        scim_user.role_managed = managed


def deprovision(*, workspace, user, membership: Membership | None) -> None:
    """Remove the membership; revoke the user's tokens bound to the workspace, its SSO sessions and their pending
    invitations to it, at once."""
    if membership is not None and membership.role == Role.OWNER:
        # only an owner removes an owner (members.py); the directory's token is not one
        raise ScimError(403, "SCIM never removes an owner: an owner of the workspace makes them another role "
                             "first, then the directory can deactivate them.")
    tokens = api_tokens_revoke_for_member(user=user, workspace=workspace, actor=None)
    sessions = AuthSession.objects.filter(user=user, sso__workspace=workspace, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason="scim_deprovisioned")
    # a pending invitation is no way back in: the directory said this person is out
    Invitation.objects.filter(workspace=workspace, email__iexact=user.email, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.REVOKED, answered_at=timezone.now())
    if membership is not None:
        audit_record(workspace=workspace, actor=None, action="member.deprovisioned", target=membership,
                     data={"user": user.pk, "email": user.email, "role": membership.role, "tokensRevoked": tokens,
                           "sessionsRevoked": sessions})
        membership.delete()
