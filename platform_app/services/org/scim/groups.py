"""Groups: create, replace, patch and delete; their members' memberships follow (a role group gives its role)."""
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower

from platform_app.models import ScimGroup, ScimUser
from platform_app.services.org.scim.common import SCHEMA_GROUP, ScimError, invalid, member_ids_of, text_of
from platform_app.services.org.scim.lookups import scim_group_get
from platform_app.services.org.scim.memberships import membership_sync, workspace_lock
from platform_app.services.org.scim.patch import patch_group, patch_operations
from platform_app.services.teams.audit import audit_record

def _members(workspace, ids: list[str]) -> list[ScimUser]:
    found = {u.pk: u for u in ScimUser.objects.filter(workspace=workspace, pk__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise invalid(f"No User {missing[0][:64]} in this workspace.")
    return [found[i] for i in ids]


def group_state(data) -> dict:
    if not isinstance(data, dict):
        raise invalid("The body must be a JSON object.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_GROUP not in schemas):
        raise invalid(f"`schemas` must include {SCHEMA_GROUP}.", "invalidSyntax")
    return {"display_name": text_of(data, "displayName", limit=255, required=True),
            "external_id": text_of(data, "externalId", limit=255),
            "members": member_ids_of(data["members"]) if data.get("members") is not None else []}


def _unique_group_name(workspace, name: str, *, exclude: str | None = None) -> None:
    clash = ScimGroup.objects.filter(workspace=workspace).annotate(lower=Lower("display_name")).filter(
        lower=name.lower())
    if exclude:
        clash = clash.exclude(pk=exclude)
    if clash.exists():
        raise ScimError(409, f"A Group named {name[:100]} exists in this workspace.", "uniqueness")


def _save_group(*, workspace, sso, group: ScimGroup, state: dict, before: set[str]) -> ScimGroup:
    _unique_group_name(workspace, state["display_name"], exclude=group.pk)
    members = _members(workspace, state["members"])
    group.display_name, group.external_id = state["display_name"], state["external_id"]
    try:
        with transaction.atomic():
            group.save()
    except IntegrityError:
        raise ScimError(409, "A Group with this name exists in this workspace.", "uniqueness")
    group.members.set(members)
    affected = before | {m.pk for m in members}
    for scim_user in ScimUser.objects.filter(pk__in=affected).select_related("user").prefetch_related("groups"):
        membership_sync(workspace=workspace, sso=sso, scim_user=scim_user)
    return scim_group_get(workspace=workspace, group_id=group.pk)


@transaction.atomic
def scim_group_create(*, workspace, data) -> ScimGroup:
    state = group_state(data)
    sso = workspace_lock(workspace)
    group = _save_group(workspace=workspace, sso=sso, group=ScimGroup(workspace=workspace), state=state, before=set())
    audit_record(workspace=workspace, actor=None, action="scim.group_created", target=group,
                 data={"displayName": group.display_name, "members": len(state["members"])})
    return group


@transaction.atomic
def scim_group_replace(*, workspace, group_id: str, data) -> ScimGroup:
    state = group_state(data)
    sso = workspace_lock(workspace)
    group = scim_group_get(workspace=workspace, group_id=group_id)
    before = {m.pk for m in group.members.all()}
    return _save_group(workspace=workspace, sso=sso, group=group, state=state, before=before)


@transaction.atomic
def scim_group_patch(*, workspace, group_id: str, data) -> ScimGroup:
    operations = patch_operations(data)
    sso = workspace_lock(workspace)
    group = scim_group_get(workspace=workspace, group_id=group_id)
    before = [m.pk for m in group.members.all()]
    state = {"display_name": group.display_name, "external_id": group.external_id, "members": list(before)}
    for op, path, value in operations:
        patch_group(state, op, path, value)
    return _save_group(workspace=workspace, sso=sso, group=group, state=state, before=set(before))


@transaction.atomic
def scim_group_delete(*, workspace, group_id: str) -> None:
    sso = workspace_lock(workspace)
    group = scim_group_get(workspace=workspace, group_id=group_id)
    members = [m.pk for m in group.members.all()]
    audit_record(workspace=workspace, actor=None, action="scim.group_deleted", target=group,
                 data={"displayName": group.display_name})
    group.delete()
    for scim_user in ScimUser.objects.filter(pk__in=members).select_related("user").prefetch_related("groups"):
        membership_sync(workspace=workspace, sso=sso, scim_user=scim_user)
