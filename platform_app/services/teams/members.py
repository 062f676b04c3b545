"""Workspace members: change a role, remove a member.

Rules: owners and admins manage members (the `admin` scope, checked by the view);
only an owner may grant or take away the owner role or remove an owner; the last
owner can be neither demoted nor removed (409 `last_owner`). The owner rows are
locked while counting so two concurrent demotions cannot leave a workspace ownerless.
"""
from django.db import transaction

from config.errors import Conflict, Forbidden, NotFound, ValidationFailed
from platform_app.choices import Role
from platform_app.models import Membership
from platform_app.services.teams.audit import audit_record
from platform_app.services.identity.tokens import api_tokens_revoke_for_member


def member_get(*, workspace, member_id: str) -> Membership:
    """A membership of this workspace by its id (`mem_...`) or its user's id (`usr_...`); 404 otherwise."""
    found = (Membership.objects.select_related("user").filter(workspace=workspace, pk=member_id).first()
             or Membership.objects.select_related("user").filter(workspace=workspace, user_id=member_id).first())
    if found is None:
        raise NotFound("No such member.")
    return found


def _lock_owners(workspace) -> list[Membership]:
    return list(Membership.objects.select_for_update().filter(workspace=workspace, role=Role.OWNER).order_by("pk"))


def _fresh_actor(actor_membership: Membership) -> Membership:
    # The role checked at the door may have changed while waiting for the owner lock.
    fresh = Membership.objects.select_related("user").filter(pk=actor_membership.pk).first()
    if fresh is None:
        raise NotFound("No such workspace.")
    return fresh


def _require_owner_for(actor_membership: Membership, target: Membership, new_role: str | None):
    touches_owner = target.role == Role.OWNER or new_role == Role.OWNER
    if touches_owner and actor_membership.role != Role.OWNER:
        raise Forbidden("Only an owner can grant, change or remove the owner role.",
                        details={"role": actor_membership.role})


@transaction.atomic
def member_role_change(*, workspace, actor_membership: Membership, member_id: str, role: str, ip: str = "") -> Membership:
    """Give a member another role."""
    if role not in Role.values:
        raise ValidationFailed(f"Unknown role `{role}`.", details={"role": [f"Must be one of {', '.join(Role.values)}."]})
    owners = _lock_owners(workspace)
    actor_membership = _fresh_actor(actor_membership)
    target = member_get(workspace=workspace, member_id=member_id)
    target = Membership.objects.select_for_update().select_related("user").get(pk=target.pk)
    _require_owner_for(actor_membership, target, role)
    if target.role == role:
        return target
    if target.role == Role.OWNER and len(owners) <= 1:
        raise Conflict("The last owner cannot be demoted; make someone else owner first.", code="last_owner")
    old = target.role
    target.role = role
    target.save(update_fields=["role"])
    audit_record(workspace=workspace, actor=actor_membership.user, action="member.role_changed", target=target,
                 data={"user": target.user_id, "email": target.user.email, "from": old, "to": role}, ip=ip)
    return target


@transaction.atomic
def member_remove(*, workspace, actor_membership: Membership, member_id: str, ip: str = "") -> Membership:
    """Remove a member and revoke their API tokens bound to this workspace."""
    owners = _lock_owners(workspace)
    actor_membership = _fresh_actor(actor_membership)
    target = member_get(workspace=workspace, member_id=member_id)
    target = Membership.objects.select_for_update().select_related("user").get(pk=target.pk)
    _require_owner_for(actor_membership, target, None)
    if target.role == Role.OWNER and len(owners) <= 1:
        raise Conflict("The last owner cannot be removed.", code="last_owner")
    revoked = api_tokens_revoke_for_member(user=target.user, workspace=workspace, actor=actor_membership.user, ip=ip)
    audit_record(workspace=workspace, actor=actor_membership.user, action="member.removed", target=target,
                 data={"user": target.user_id, "email": target.user.email, "role": target.role,
                       "tokens_revoked": revoked}, ip=ip)
    target.delete()
    return target
