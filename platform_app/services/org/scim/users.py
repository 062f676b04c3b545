"""Users: create, replace, patch and delete, each keeping the account and the membership in step."""
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower

from platform_app.models import (AuthSession, LinkedIdentity, Membership, ScimUser, SsoIdentity, WorkspaceSso)
from platform_app.services.identity.email_verification import email_change
from platform_app.services.org.growth_events import SIGNED_UP, growth_event_record
from platform_app.services.org.scim.common import SCHEMA_USER, ScimError, bool_of, emails_of, invalid, name_of, text_of
from platform_app.services.org.scim.lookups import scim_user_get
from platform_app.services.org.scim.memberships import deprovision, membership_sync, workspace_lock
from platform_app.services.org.scim.patch import patch_operations, patch_user
from platform_app.services.teams.audit import audit_record

User = get_user_model()


def user_state(data) -> dict:
    """A User resource (a create or replace body) as the fields kept; 400 `invalidValue`/`invalidSyntax`."""
    if not isinstance(data, dict):
        raise invalid("The body must be a JSON object.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_USER not in schemas):
        raise invalid(f"`schemas` must include {SCHEMA_USER}.", "invalidSyntax")
    given, family = name_of(data.get("name"))
    return {"user_name": text_of(data, "userName", limit=255, required=True),
            "external_id": text_of(data, "externalId", limit=255), "given_name": given, "family_name": family,
            "display_name": text_of(data, "displayName", limit=255), "emails": emails_of(data.get("emails")),
            "active": bool_of(data["active"], "active") if data.get("active") is not None else True}


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
        raise invalid("A User needs an email address: in `emails`, or a `userName` that is one.")
    return chosen.lower()


def _display(state: dict) -> str:
    return (state["display_name"] or f"{state['given_name']} {state['family_name']}".strip())[:150]


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
        raise invalid("The email's domain is not one of the workspace's allowed domains.")


@transaction.atomic
def scim_user_create(*, workspace, data) -> ScimUser:
    state = user_state(data)
    sso = workspace_lock(workspace)
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
    membership_sync(workspace=workspace, sso=sso, scim_user=scim_user)
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
    membership_sync(workspace=workspace, sso=sso, scim_user=scim_user)
    audit_record(workspace=workspace, actor=None, action="scim.user_updated", target=scim_user,
                 data={"userName": scim_user.user_name, "active": scim_user.active})
    return scim_user_get(workspace=workspace, user_id=scim_user.pk)


@transaction.atomic
def scim_user_replace(*, workspace, user_id: str, data) -> ScimUser:
    state = user_state(data)
    sso = workspace_lock(workspace)
    scim_user = scim_user_get(workspace=workspace, user_id=user_id)
    return _apply_user(workspace=workspace, sso=sso, scim_user=scim_user, state=state)


@transaction.atomic
def scim_user_patch(*, workspace, user_id: str, data) -> ScimUser:
    operations = patch_operations(data)
    sso = workspace_lock(workspace)
    scim_user = scim_user_get(workspace=workspace, user_id=user_id)
    state = _state_of(scim_user)
    for op, path, value in operations:
        patch_user(state, op, path, value)
    return _apply_user(workspace=workspace, sso=sso, scim_user=scim_user, state=state)


@transaction.atomic
def scim_user_delete(*, workspace, user_id: str) -> None:
    workspace_lock(workspace)
    scim_user = scim_user_get(workspace=workspace, user_id=user_id)
    membership = (Membership.objects.select_for_update().select_related("user")
                  .filter(workspace=workspace, user_id=scim_user.user_id).first())
    deprovision(workspace=workspace, user=scim_user.user, membership=membership)
    audit_record(workspace=workspace, actor=None, action="scim.user_deleted", target=scim_user,
                 data={"userName": scim_user.user_name, "user": scim_user.user_id})
    scim_user.delete()
