"""A workspace's IP allowlist: the networks its API routes and pages answer (enforced by services/org/access.py).

A change that would leave the caller outside a non-empty list (adding the first entry elsewhere, deleting the
entry the caller is in) is 409 `allowlist_lockout` unless confirmed. Owners locked out anyway clear the list with
`manage.py allowlist_clear <workspace>` (the break-glass path, docs/org.md)."""
from django.conf import settings
from django.db import IntegrityError, transaction

from config.errors import Conflict, NotFound, ValidationFailed
from platform_app.models import IpAllowlistEntry, Workspace
from platform_app.services.org.access import address_allowed, network_parse
from platform_app.services.teams.audit import audit_record


def allowlist_entries(*, workspace):
    return IpAllowlistEntry.objects.filter(workspace=workspace)


def cidr_normalize(value) -> str:
    """The canonical CIDR of a network or a bare address (IPv4 or IPv6); 400 naming `cidr` otherwise."""
    try:
        return str(network_parse(value if isinstance(value, str) else ""))
    except ValueError:
        raise ValidationFailed("cidr must be an IPv4 or IPv6 network (e.g. 203.0.113.0/24, 2001:db8::/32) or "
                               "address.", details={"cidr": ["Not an IP network."]})


def _lockout(ip: str) -> Conflict:
    return Conflict(f"Your address ({ip}) would not be on the allowlist: you would lose access to this workspace. "
                    "Send `confirm: true` to do it anyway.", code="allowlist_lockout", details={"ip": ip})


@transaction.atomic
def allowlist_entry_add(*, workspace, actor, cidr: str, note: str = "", ip: str, confirm: bool = False
                        ) -> IpAllowlistEntry:
    """Add a network. 409 `allowlist_lockout` when the list would not hold the caller's address (unless
    `confirm`), 409 `duplicate` for a network already listed."""
    cidr = cidr_normalize(cidr)
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()  # one change of the list at a time
    cidrs = list(allowlist_entries(workspace=workspace).values_list("cidr", flat=True))
    if cidr in cidrs:
        raise Conflict(f"{cidr} is already on the allowlist.", code="duplicate", details={"cidr": ["Already listed."]})
    if len(cidrs) >= settings.IP_ALLOWLIST_MAX_ENTRIES:
        raise Conflict(f"An allowlist holds at most {settings.IP_ALLOWLIST_MAX_ENTRIES} entries.",
                       code="limit_reached", details={"limit": settings.IP_ALLOWLIST_MAX_ENTRIES})
    if not confirm and not address_allowed(ip, [*cidrs, cidr]):
        raise _lockout(ip)
    try:
        with transaction.atomic():
            entry = IpAllowlistEntry.objects.create(workspace=workspace, cidr=cidr, note=(note or "").strip(),
                                                    created_by=actor if getattr(actor, "pk", None) else None)
    except IntegrityError:
        raise Conflict(f"{cidr} is already on the allowlist.", code="duplicate", details={"cidr": ["Already listed."]})
    audit_record(workspace=workspace, actor=actor, action="ip_allowlist.added", target=entry,
                 data={"cidr": cidr, "note": entry.note, "confirmed": confirm}, ip=ip)
    return entry


@transaction.atomic
def allowlist_entry_delete(*, workspace, actor, entry_id: str, ip: str, confirm: bool = False) -> IpAllowlistEntry:
    """Remove a network. An emptied list allows every address; a list left without the caller's address is 409
    `allowlist_lockout` unless `confirm`."""
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    entry = allowlist_entries(workspace=workspace).filter(pk=entry_id).first()
    if entry is None:
        raise NotFound("No such allowlist entry.")
    rest = list(allowlist_entries(workspace=workspace).exclude(pk=entry.pk).values_list("cidr", flat=True))
    if rest and not confirm and not address_allowed(ip, rest):
        raise _lockout(ip)
    entry.delete()
    audit_record(workspace=workspace, actor=actor, action="ip_allowlist.removed", target=entry,
                 data={"cidr": entry.cidr, "confirmed": confirm}, ip=ip)
    return entry


@transaction.atomic
def allowlist_clear(*, workspace, reason: str = "break-glass") -> int:
    """Empty the list (every address allowed again): the owner's break-glass path, from `manage.py`."""
    deleted, _ = allowlist_entries(workspace=workspace).delete()
    audit_record(workspace=workspace, actor=None, action="ip_allowlist.cleared", target=workspace,
                 data={"entries": deleted, "reason": reason})
    return deleted
