"""SCIM 2.0 provisioning of one workspace (RFC 7643 resources, RFC 7644 operations): its directory creates, changes
and deactivates Users and Groups, and the platform keeps accounts and memberships in step (docs/org.md).

- A User stands for a platform account, found by its email (the primary of `emails`, else the first, else
  `userName` when it is an address) or created for it. An existing account is linked only when it is already a
  member of the workspace (its owner consented); any other is 409 `uniqueness`. When the workspace lists `allowedDomains`, the email must
  be in one of them. `userName` is unique in the workspace, case-insensitively (409 `uniqueness`), and so is the
  account.
- An active User is a member; `active: false` or DELETE removes the membership and at once revokes the user's API
  tokens bound to the workspace and the sessions started through its single sign-on. An owner is never removed this
  way (403): an owner makes them another role first.
- Roles: a Group named like a role (`admin`, `developer`, `billing`, `viewer`; case-insensitive) gives its members
  that role, the highest when several; a member in none of them gets the SSO settings' default role, once SCIM has
  managed their role (a member who joined otherwise keeps theirs until a role group names them). Owners are never
  changed by SCIM.
Every write locks the workspace row: one SCIM change of a workspace at a time, so uniqueness and roles stay exact.
"""
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from config.errors import ApplicationError
from platform_app.choices import Role
from platform_app.models import (AuthSession, Invitation, LinkedIdentity, Membership, ScimGroup, ScimUser,
                                 SsoIdentity, Workspace, WorkspaceSso)
from platform_app.services.identity.email_verification import email_change
from platform_app.services.identity.tokens import api_tokens_revoke_for_member
from platform_app.services.org.growth_events import SIGNED_UP, growth_event_record
from platform_app.services.teams.audit import audit_record

User = get_user_model()

SCHEMA_USER = "urn:ietf:params:scim:schemas:core:2.0:User"
SCHEMA_GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
SCHEMA_PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ROLE_PRIORITY = (Role.ADMIN, Role.DEVELOPER, Role.BILLING, Role.VIEWER)
MAX_EMAILS, MAX_MEMBERS_PER_REQUEST, MAX_OPERATIONS = 10, 1000, 100


class ScimError(ApplicationError):
    """An answer in SCIM's error schema: `status`, `detail` and, for 400 and 409, a `scimType`."""

    def __init__(self, status: int, detail: str, scim_type: str | None = None):
        super().__init__(detail, status=status, code=scim_type or "scim_error")
        self.scim_type = scim_type


def _invalid(detail: str, scim_type: str = "invalidValue") -> ScimError:
    return ScimError(400, detail, scim_type)


# Input ------------------------------------------------------------------------------------------

def _text(data: dict, key: str, *, limit: int, required: bool = False) -> str:
    return _string(data.get(key), key, limit=limit, required=required)


def _string(value, key: str, *, limit: int, required: bool = False) -> str:
    if value is None:
        if required:
            raise _invalid(f"`{key}` is required.")
        return ""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise _invalid(f"`{key}` must be a string of at most {limit} characters.")
    value = value.strip()
    if required and not value:
        raise _invalid(f"`{key}` is required.")
    return value


def _bool(value, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"  # some directories send "False"
    raise _invalid(f"`{key}` must be a boolean.")


def _emails(value) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EMAILS:
        raise _invalid(f"`emails` must be a list of at most {MAX_EMAILS} items.")
    emails = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("value"), str):
            raise _invalid("Each of `emails` needs a `value`.")
        address = item["value"].strip()
        try:
            validate_email(address)
        except DjangoValidationError:
            raise _invalid(f"Not an email address: {address[:100]}.")
        email = {"value": address, "primary": _bool(item.get("primary", False), "emails.primary")}
        if isinstance(item.get("type"), str) and item["type"]:
            email["type"] = item["type"][:32]
        emails.append(email)
    return emails


def _name(value) -> tuple[str, str]:
    if value is None:
        return "", ""
    if not isinstance(value, dict):
        raise _invalid("`name` must be an object.")
    return _text(value, "givenName", limit=150), _text(value, "familyName", limit=150)


def user_state(data) -> dict:
    """A User resource (a create or replace body) as the fields kept; 400 `invalidValue`/`invalidSyntax`."""
    if not isinstance(data, dict):
        raise _invalid("The body must be a JSON object.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_USER not in schemas):
        raise _invalid(f"`schemas` must include {SCHEMA_USER}.", "invalidSyntax")
    given, family = _name(data.get("name"))
    return {"user_name": _text(data, "userName", limit=255, required=True),
            "external_id": _text(data, "externalId", limit=255), "given_name": given, "family_name": family,
            "display_name": _text(data, "displayName", limit=255), "emails": _emails(data.get("emails")),
            "active": _bool(data["active"], "active") if data.get("active") is not None else True}


def _state_of(scim_user: ScimUser) -> dict:
    return {"user_name": scim_user.user_name, "external_id": scim_user.external_id,
            "given_name": scim_user.given_name, "family_name": scim_user.family_name,
            "display_name": scim_user.display_name, "emails": list(scim_user.emails), "active": scim_user.active}


def _account_email(state: dict, current: str = "") -> str:
    """The account's address: the primary of `emails`, else the first, else a `userName` that is one, else (once
    linked) the address it has."""
    emails = state["emails"]
    chosen = next((e["value"] for e in emails if e.get("primary")), None) or (emails[0]["value"] if emails else None)
    if not chosen:
        try:
            validate_email(state["user_name"])
            chosen = state["user_name"]
        except DjangoValidationError:
            chosen = current
    try:
        validate_email(chosen)
    except DjangoValidationError:
        raise _invalid("A User needs an email address: in `emails`, or a `userName` that is one.")
    return chosen.lower()


def _display(state: dict) -> str:
    return (state["display_name"] or f"{state['given_name']} {state['family_name']}".strip())[:150]


# Lookups ----------------------------------------------------------------------------------------

FILTER = re.compile(r'^\s*([A-Za-z][\w.:-]*)\s+(eq)\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)
USER_FILTERS = {"username": "user_name__iexact", "externalid": "external_id", "displayname": "display_name"}
GROUP_FILTERS = {"displayname": "display_name__iexact", "externalid": "external_id"}


def _filtered(queryset, expression: str | None, fields: dict):
    """`attribute eq "value"` on the attributes in `fields`; anything else is 400 `invalidFilter`."""
    if not expression:
        return queryset
    match = FILTER.match(expression)
    attribute = match.group(1).lower().rsplit(":", 1)[-1] if match else ""
    if match is None or attribute not in fields:
        raise _invalid(f"Unsupported filter; use `attribute eq \"value\"` on one of "
                       f"{', '.join(sorted(fields))}.", "invalidFilter")
    value = re.sub(r"\\(.)", r"\1", match.group(3))
    return queryset.filter(**{fields[attribute]: value})


def scim_page(queryset, *, start_index: int, count: int | None) -> tuple[int, list]:
    """(totalResults, the page): `startIndex` is 1-based; `count` at most SCIM_MAX_RESULTS."""
    total = queryset.count()
    count = settings.SCIM_MAX_RESULTS if count is None else max(0, min(count, settings.SCIM_MAX_RESULTS))
    first = max(start_index, 1) - 1
    return total, list(queryset[first:first + count]) if count else []


def scim_users(*, workspace, filter: str | None = None):
    return _filtered(ScimUser.objects.filter(workspace=workspace).select_related("user")
                     .prefetch_related("groups").order_by("created_at", "pk"), filter, USER_FILTERS)


def scim_groups(*, workspace, filter: str | None = None):
    return _filtered(ScimGroup.objects.filter(workspace=workspace).prefetch_related("members")
                     .order_by("created_at", "pk"), filter, GROUP_FILTERS)


def scim_user_get(*, workspace, user_id: str) -> ScimUser:
    found = scim_users(workspace=workspace).filter(pk=user_id).first()
    if found is None:
        raise ScimError(404, f"User {user_id[:64]} not found.")
    return found


def scim_group_get(*, workspace, group_id: str) -> ScimGroup:
    found = scim_groups(workspace=workspace).filter(pk=group_id).first()
    if found is None:
        raise ScimError(404, f"Group {group_id[:64]} not found.")
    return found


# Memberships ------------------------------------------------------------------------------------

def _lock(workspace) -> WorkspaceSso | None:
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    return WorkspaceSso.objects.filter(workspace=workspace).first()


def _group_role(scim_user: ScimUser) -> str | None:
    names = {g.display_name.strip().lower() for g in scim_user.groups.all()}
    return next((role.value for role in ROLE_PRIORITY if role.value in names), None)


def _sync(*, workspace, sso: WorkspaceSso | None, scim_user: ScimUser) -> None:
    """Bring the account's membership in line with the record: present with its role when active, gone (and the
    access it gave revoked) when not."""
    membership = (Membership.objects.select_for_update().select_related("user")
                  .filter(workspace=workspace, user_id=scim_user.user_id).first())
    if not scim_user.active:
        _deprovision(workspace=workspace, user=scim_user.user, membership=membership)
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


def _deprovision(*, workspace, user, membership: Membership | None) -> None:
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


# Users ------------------------------------------------------------------------------------------

def _unique_user_name(workspace, user_name: str, *, exclude: str | None = None) -> None:
    clash = ScimUser.objects.filter(workspace=workspace).annotate(lower=Lower("user_name")).filter(
        lower=user_name.lower())
    if exclude:
        clash = clash.exclude(pk=exclude)
    if clash.exists():
        raise ScimError(409, f"A User with userName {user_name[:100]} exists in this workspace.", "uniqueness")


def _allowed_domain(sso: WorkspaceSso | None, email: str) -> None:
    domains = sso.allowed_domains if sso else []
    if domains and email.rsplit("@", 1)[1] not in domains:
        raise _invalid("The email's domain is not one of the workspace's allowed domains.")


@transaction.atomic
def scim_user_create(*, workspace, data) -> ScimUser:
    state = user_state(data)
    sso = _lock(workspace)
    _unique_user_name(workspace, state["user_name"])
    email = _account_email(state)
    _allowed_domain(sso, email)
    account = User.objects.filter(email__iexact=email).first()
    created = account is None
    if account is not None and ScimUser.objects.filter(workspace=workspace, user=account).exists():
        raise ScimError(409, "Another User of this workspace has this email address.", "uniqueness")
    # An existing account is linked only when its owner consented: it is already a member (it accepted an
    # invitation or joined otherwise). Anyone else's account is never added, promoted or shown by SCIM.
    if account is not None and not Membership.objects.filter(workspace=workspace, user=account).exists():
        raise ScimError(409, "An account with this email address exists; SCIM creates only new accounts. Invite "
                             "it to the workspace instead.", "uniqueness")
    if created:
        try:
            with transaction.atomic():
                account = User.objects.create_user(email=email, password=None, name=_display(state))
        except IntegrityError:  # the same address signed up a moment ago: provision it on the next try
            raise ScimError(409, "An account with this email was just created; try again.", "uniqueness")
        growth_event_record(event=SIGNED_UP, user=account, properties={"via": "scim", "workspace": workspace.pk})
    try:
        with transaction.atomic():
            scim_user = ScimUser.objects.create(workspace=workspace, user=account, account_created=created, **state)
    except IntegrityError:
        raise ScimError(409, "A User with this userName exists in this workspace.", "uniqueness")
    _sync(workspace=workspace, sso=sso, scim_user=scim_user)
    audit_record(workspace=workspace, actor=None, action="scim.user_created", target=scim_user,
                 data={"userName": scim_user.user_name, "user": account.pk, "accountCreated": created,
                       "active": scim_user.active})
    return scim_user_get(workspace=workspace, user_id=scim_user.pk)


def account_used_elsewhere(*, account, workspace) -> bool:
    """Whether someone has used this account other than through this workspace: it has a password, a social
    sign-in identity, an identity or membership in another workspace, or an API session not started through this
    workspace's SSO. Such an account is no longer the directory's alone, so SCIM may not move its address."""
    return (account.has_usable_password()
            or LinkedIdentity.objects.filter(user=account).exists()
            or SsoIdentity.objects.filter(user=account).exclude(workspace=workspace).exists()
            or Membership.objects.filter(user=account).exclude(workspace=workspace).exists()
            or AuthSession.objects.filter(user=account).exclude(sso__workspace=workspace).exists())


def _apply_user(*, workspace, sso, scim_user: ScimUser, state: dict) -> ScimUser:
    """Store `state` on the record (and on its account when the workspace created it), then sync."""
    if state["user_name"].lower() != scim_user.user_name.lower():
        _unique_user_name(workspace, state["user_name"], exclude=scim_user.pk)
    account = scim_user.user
    email = _account_email(state, current=account.email)
    if scim_user.account_created:  # the workspace's own account follows its directory
        if email.lower() != account.email.lower():
            _allowed_domain(sso, email)
            if User.objects.filter(email__iexact=email).exclude(pk=account.pk).exists():
                raise ScimError(409, "Another account has this email address.", "uniqueness")
            if account_used_elsewhere(account=account, workspace=workspace):
                raise ScimError(409, "This account has been used outside this workspace's single sign-on; its "
                                     "address is its owner's to change.", "mutability")
            email_change(user=account, email=email)  # unverified until the new address's link is opened
        if _display(state) and _display(state) != account.name:
            account.name = _display(state)
            account.save(update_fields=["name"])
    for name, value in state.items():
        setattr(scim_user, name, value)
    try:
        with transaction.atomic():
            scim_user.save()
    except IntegrityError:
        raise ScimError(409, "A User with this userName exists in this workspace.", "uniqueness")
    _sync(workspace=workspace, sso=sso, scim_user=scim_user)
    audit_record(workspace=workspace, actor=None, action="scim.user_updated", target=scim_user,
                 data={"userName": scim_user.user_name, "active": scim_user.active})
    return scim_user_get(workspace=workspace, user_id=scim_user.pk)


@transaction.atomic
def scim_user_replace(*, workspace, user_id: str, data) -> ScimUser:
    state = user_state(data)
    sso = _lock(workspace)
    scim_user = scim_user_get(workspace=workspace, user_id=user_id)
    return _apply_user(workspace=workspace, sso=sso, scim_user=scim_user, state=state)


@transaction.atomic
def scim_user_patch(*, workspace, user_id: str, data) -> ScimUser:
    operations = patch_operations(data)
    sso = _lock(workspace)
    scim_user = scim_user_get(workspace=workspace, user_id=user_id)
    state = _state_of(scim_user)
    for op, path, value in operations:
        _patch_user(state, op, path, value)
    return _apply_user(workspace=workspace, sso=sso, scim_user=scim_user, state=state)


@transaction.atomic
def scim_user_delete(*, workspace, user_id: str) -> None:
    _lock(workspace)
    scim_user = scim_user_get(workspace=workspace, user_id=user_id)
    membership = (Membership.objects.select_for_update().select_related("user")
                  .filter(workspace=workspace, user_id=scim_user.user_id).first())
    _deprovision(workspace=workspace, user=scim_user.user, membership=membership)
    audit_record(workspace=workspace, actor=None, action="scim.user_deleted", target=scim_user,
                 data={"userName": scim_user.user_name, "user": scim_user.user_id})
    scim_user.delete()


# PATCH (RFC 7644 3.5.2) ---------------------------------------------------------------------------

def patch_operations(data) -> list[tuple[str, str, object]]:
    """(op, path, value) of a PatchOp body: op add/replace/remove (any case), path lower-cased without the core
    schema's URN."""
    if not isinstance(data, dict) or not isinstance(data.get("Operations"), list):
        raise _invalid("A PatchOp body needs `Operations`.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_PATCH not in schemas):
        raise _invalid(f"`schemas` must include {SCHEMA_PATCH}.", "invalidSyntax")
    if not data["Operations"] or len(data["Operations"]) > MAX_OPERATIONS:
        raise _invalid(f"Between 1 and {MAX_OPERATIONS} operations.", "invalidSyntax")
    found = []
    for item in data["Operations"]:
        op = item.get("op") if isinstance(item, dict) else None
        if not isinstance(op, str) or op.lower() not in ("add", "replace", "remove"):
            raise _invalid("Each operation's `op` is add, replace or remove.", "invalidSyntax")
        path = item.get("path")
        if path is not None and (not isinstance(path, str) or len(path) > 300):
            raise _invalid("`path` must be a string.", "invalidPath")
        path = _core_path(path or "")
        if op.lower() == "remove" and not path:
            raise ScimError(400, "A remove operation needs a `path`.", "noTarget")
        if op.lower() != "remove" and "value" not in item:
            raise _invalid(f"A {op} operation needs a `value`.", "invalidSyntax")
        found.append((op.lower(), path, item.get("value")))
    return found


def _core_path(path: str) -> str:
    path = path.strip()
    for schema in (SCHEMA_USER, SCHEMA_GROUP):
        if path.lower().startswith(schema.lower() + ":"):
            path = path[len(schema) + 1:]
    return path


EMAIL_FILTER = re.compile(r'^emails\[\s*(type|primary)\s+eq\s+("?)([^"\]]*)\2\s*\](?:\.(value))?$', re.IGNORECASE)
MEMBER_FILTER = re.compile(r'^members\[\s*value\s+eq\s+"([^"]+)"\s*\]$', re.IGNORECASE)


def _patch_user(state: dict, op: str, path: str, value) -> None:
    if not path:  # the value is an object of attributes (and dotted sub-attributes) to add or replace
        if not isinstance(value, dict):
            raise _invalid("An operation without `path` needs an object `value`.")
        for key, item in value.items():
            _patch_user(state, op, _core_path(str(key)), item)
        return
    lower = path.lower()
    email_match = EMAIL_FILTER.match(path)
    if lower.startswith("urn:"):
        return  # an extension schema's attribute (enterprise user: department, manager...): not kept
    if email_match:
        _patch_email(state, op, email_match, value)
    elif lower == "active":
        if op == "remove":
            raise ScimError(400, "`active` cannot be removed.", "mutability")
        state["active"] = _bool(value, "active")
    elif lower in ("username", "externalid", "displayname"):
        key = {"username": "user_name", "externalid": "external_id", "displayname": "display_name"}[lower]
        if op == "remove":
            if key == "user_name":
                raise ScimError(400, "`userName` is required.", "mutability")
            state[key] = ""
        else:
            state[key] = _string(value, path, limit=255, required=key == "user_name")
    elif lower in ("name.givenname", "name.familyname"):
        key = "given_name" if lower == "name.givenname" else "family_name"
        state[key] = "" if op == "remove" else _string(value, path, limit=150)
    elif lower == "name.formatted":
        return  # derived from the given and family names
    elif lower == "name":
        state["given_name"], state["family_name"] = ("", "") if op == "remove" else _name(value)
    elif lower == "emails":
        if op == "remove":
            state["emails"] = []
        else:
            added = _emails(value if isinstance(value, list) else [value])
            state["emails"] = added if op == "replace" else _merge_emails(state["emails"], added)
    else:
        raise ScimError(400, f"Unknown or read-only attribute path: {path[:100]}.", "invalidPath")


def _merge_emails(current: list, added: list) -> list:
    """`added` replace the same addresses; an added primary makes the others not primary (RFC 7643 2.4: one)."""
    kept = [e for e in current if e["value"].lower() not in {a["value"].lower() for a in added}]
    if any(a.get("primary") for a in added):
        kept = [{**e, "primary": False} for e in kept]
    merged = kept + added
    if len(merged) > MAX_EMAILS:
        raise _invalid(f"At most {MAX_EMAILS} emails.")
    return merged


def _patch_email(state: dict, op: str, match, value) -> None:
    attribute, wanted = match.group(1).lower(), match.group(3)

    def hit(email):
        if attribute == "type":
            return email.get("type", "").lower() == wanted.lower()
        return email.get("primary", False) == (wanted.lower() == "true")

    if op == "remove":
        state["emails"] = [e for e in state["emails"] if not hit(e)]
        return
    if match.group(4) is None:  # the whole matching email
        replacement = _emails([value])[0]
        state["emails"] = [replacement if hit(e) else e for e in state["emails"]]
        if not any(hit(e) for e in state["emails"]):
            state["emails"].append(replacement)
        return
    address = _emails([{"value": value}])[0]["value"]
    for email in state["emails"]:
        if hit(email):
            email["value"] = address
            return
    new = {"value": address, "primary": attribute == "primary" and wanted.lower() == "true"}
    if attribute == "type":
        new["type"] = wanted[:32]
    state["emails"] = _merge_emails(state["emails"], [new])


# Groups -----------------------------------------------------------------------------------------

def _member_ids(value) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_MEMBERS_PER_REQUEST:
        raise _invalid(f"At most {MAX_MEMBERS_PER_REQUEST} members per request.")
    ids = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("value"), str):
            raise _invalid("Each member needs a `value` (a User's id).")
        ids.append(item["value"])
    return list(dict.fromkeys(ids))


def _members(workspace, ids: list[str]) -> list[ScimUser]:
    found = {u.pk: u for u in ScimUser.objects.filter(workspace=workspace, pk__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise _invalid(f"No User {missing[0][:64]} in this workspace.")
    return [found[i] for i in ids]


def group_state(data) -> dict:
    if not isinstance(data, dict):
        raise _invalid("The body must be a JSON object.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_GROUP not in schemas):
        raise _invalid(f"`schemas` must include {SCHEMA_GROUP}.", "invalidSyntax")
    return {"display_name": _text(data, "displayName", limit=255, required=True),
            "external_id": _text(data, "externalId", limit=255),
            "members": _member_ids(data["members"]) if data.get("members") is not None else []}


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
        _sync(workspace=workspace, sso=sso, scim_user=scim_user)
    return scim_group_get(workspace=workspace, group_id=group.pk)


@transaction.atomic
def scim_group_create(*, workspace, data) -> ScimGroup:
    state = group_state(data)
    sso = _lock(workspace)
    group = _save_group(workspace=workspace, sso=sso, group=ScimGroup(workspace=workspace), state=state, before=set())
    audit_record(workspace=workspace, actor=None, action="scim.group_created", target=group,
                 data={"displayName": group.display_name, "members": len(state["members"])})
    return group


@transaction.atomic
def scim_group_replace(*, workspace, group_id: str, data) -> ScimGroup:
    state = group_state(data)
    sso = _lock(workspace)
    group = scim_group_get(workspace=workspace, group_id=group_id)
    before = {m.pk for m in group.members.all()}
    return _save_group(workspace=workspace, sso=sso, group=group, state=state, before=before)


@transaction.atomic
def scim_group_patch(*, workspace, group_id: str, data) -> ScimGroup:
    operations = patch_operations(data)
    sso = _lock(workspace)
    group = scim_group_get(workspace=workspace, group_id=group_id)
    before = [m.pk for m in group.members.all()]
    state = {"display_name": group.display_name, "external_id": group.external_id, "members": list(before)}
    for op, path, value in operations:
        _patch_group(state, op, path, value)
    return _save_group(workspace=workspace, sso=sso, group=group, state=state, before=set(before))


def _patch_group(state: dict, op: str, path: str, value) -> None:
    if not path:
        if not isinstance(value, dict):
            raise _invalid("An operation without `path` needs an object `value`.")
        for key, item in value.items():
            _patch_group(state, op, _core_path(str(key)), item)
        return
    lower, member = path.lower(), MEMBER_FILTER.match(path)
    if member:
        if op != "remove":
            raise _invalid("A member filter path is for remove.", "invalidPath")
        state["members"] = [m for m in state["members"] if m != member.group(1)]
    elif lower == "members":
        if op == "remove":
            gone = set(_member_ids(value)) if value is not None else set(state["members"])
            state["members"] = [m for m in state["members"] if m not in gone]
        elif op == "add":
            state["members"] = list(dict.fromkeys([*state["members"], *_member_ids(value)]))
        else:
            state["members"] = _member_ids(value) if value else []
    elif lower == "displayname":
        if op == "remove":
            raise ScimError(400, "`displayName` is required.", "mutability")
        state["display_name"] = _string(value, path, limit=255, required=True)
    elif lower == "externalid":
        state["external_id"] = "" if op == "remove" else _string(value, path, limit=255)
    else:
        raise ScimError(400, f"Unknown or read-only attribute path: {path[:100]}.", "invalidPath")


@transaction.atomic
def scim_group_delete(*, workspace, group_id: str) -> None:
    sso = _lock(workspace)
    group = scim_group_get(workspace=workspace, group_id=group_id)
    members = [m.pk for m in group.members.all()]
    audit_record(workspace=workspace, actor=None, action="scim.group_deleted", target=group,
                 data={"displayName": group.display_name})
    group.delete()
    for scim_user in ScimUser.objects.filter(pk__in=members).select_related("user").prefetch_related("groups"):
        _sync(workspace=workspace, sso=sso, scim_user=scim_user)
