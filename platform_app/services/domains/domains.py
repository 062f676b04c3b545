"""Custom domains: adding, DNS verification and re-checks, the primary domain, redirects and branch domains.

A domain is verified when its DNS carries any one of the records `domain_verification` lists (a TXT challenge
with the domain's token, a CNAME to the platform's target, or an A/AAAA to one of its addresses). Checks ask
the resolvers the outbound guard asks (OUTBOUND_DNS_SERVERS). The edge serves only verified domains
(`platform_app/services/domains/routing.py`)."""
import logging
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from config import outbound
from config.errors import Conflict, NotFound, ValidationFailed
from platform_app.models import Domain
from platform_app.services.domains import caddy  # noqa: F401 - its signals push Caddy's configuration after saves
from platform_app.services.domains.names import hostname_normalize, hostname_reserved
from platform_app.services.teams.audit import audit_record
from platform_app.services.org.growth_events import FIRST_DOMAIN, growth_event_record

logger = logging.getLogger(__name__)

# What the platform asks for ---------------------------------------------------------------

def verification_targets() -> dict:
    """`{"txtPrefix", "cname", "a", "aaaa"}`: what every domain's DNS may point at."""
    return {"txt_prefix": settings.DOMAINS_TXT_PREFIX, "cname": settings.DOMAINS_CNAME_TARGET,
            "a": list(settings.DOMAINS_A_RECORDS), "aaaa": list(settings.DOMAINS_AAAA_RECORDS)}


def challenge_name(domain: Domain) -> str:
    return f"_{settings.DOMAINS_TXT_PREFIX}-challenge.{domain.name}"


def domain_verification(domain: Domain) -> list[dict]:
    """The records the owner may create (any one verifies): `[{"type", "name", "value"}]`."""
    records = [{"type": "TXT", "name": challenge_name(domain), "value": domain.verification_token}]
    if settings.DOMAINS_CNAME_TARGET:
        records.append({"type": "CNAME", "name": domain.name, "value": settings.DOMAINS_CNAME_TARGET})
    records += [{"type": "A", "name": domain.name, "value": a} for a in settings.DOMAINS_A_RECORDS]
    records += [{"type": "AAAA", "name": domain.name, "value": a} for a in settings.DOMAINS_AAAA_RECORDS]
    return records


def domain_last_check(domain: Domain) -> dict | None:
    if domain.last_check_at is None:
        return None
    check = {"at": domain.last_check_at, "found": domain.last_check_found}
    if domain.last_check_error:
        check["error"] = domain.last_check_error
    return check


# Reading ----------------------------------------------------------------------------------

def domains_of_project(project):
    return Domain.objects.filter(project=project).select_related("project")


def domains_of_workspace(workspace, *, status: str | None = None):
    """The workspace's domains, optionally only those in `status` (400 for a status that does not exist)."""
    rows = Domain.objects.filter(project__workspace=workspace).select_related("project")
    if status is not None:
        if status not in Domain.Status.values:
            raise ValidationFailed(f"`status` must be one of {', '.join(Domain.Status.values)}.",
                                   details={"status": ["Unknown status."]})
        rows = rows.filter(status=status)
    return rows


def domain_get(*, project, domain_id: str) -> Domain:
    """A domain of this project by id or name; 404 otherwise."""
    found = (Domain.objects.filter(project=project, pk=domain_id).first()
             or Domain.objects.filter(project=project, name=domain_id.lower()).first())
    if found is None:
        raise NotFound("No such domain.")
    return found


# Changing ---------------------------------------------------------------------------------

def _redirect_target(project, domain_name: str, value) -> str:
    """`redirectTo` names another domain of the project that does not redirect itself (no chains)."""
    if not value:
        return ""
    target = hostname_normalize(value, field="redirectTo")
    if target == domain_name:
        raise ValidationFailed("redirectTo: a domain cannot redirect to itself.",
                               details={"redirectTo": ["Must name another domain of this project."]})
    other = Domain.objects.filter(project=project, name=target).first()
    if other is None:
        raise ValidationFailed("redirectTo: must name another domain of this project.",
                               details={"redirectTo": ["Must name another domain of this project."]})
    if other.redirect_to:
        raise ValidationFailed("redirectTo: that domain redirects itself; point at its target instead.",
                               details={"redirectTo": ["That domain redirects to another one."]})
    return target


def _git_branch(value) -> str:
    branch = (value or "").strip()
    if len(branch) > 200 or any(ord(c) < 0x20 for c in branch) or branch.startswith("-"):
        raise ValidationFailed("gitBranch: not a branch name.", details={"gitBranch": ["Not a branch name."]})
    return branch


@transaction.atomic
def domain_add(*, project, name, redirect_to=None, git_branch=None, actor=None, ip: str = "") -> Domain:
    """A pending domain of `project`: a claim on the name. 400 for what is not a host name or is the platform's
    own domain; 409 `domain_taken` when a project holds the name (verified, or misconfigured since) or this
    project has it already. Other projects' pending claims do not block it: the first to verify takes the name
    (`domain_check`)."""
    name = hostname_normalize(name)
    reserved = hostname_reserved(name)
    if reserved:
        raise ValidationFailed(f"{name} belongs to the platform ({reserved}); add a domain of your own.",
                               code="domain_reserved", details={"name": [f"{reserved} and its subdomains are "
                                                                         f"the platform's."]})
    domain = Domain(project=project, name=name, verification_token=secrets.token_hex(16),
                    redirect_to=_redirect_target(project, name, redirect_to), git_branch=_git_branch(git_branch))
    taken = Conflict(f"{name} is already added to a project.", code="domain_taken",
                     details={"name": ["Already added to a project."]})
    if Domain.objects.filter(name=name).filter(~Q(status=Domain.Status.PENDING) | Q(project=project)).exists():
        raise taken
    try:
        with transaction.atomic():
            domain.save(force_insert=True)
    except IntegrityError:  # the same project twice at once
        raise taken from None
    audit_record(workspace=project.workspace, actor=actor, action="domain.added", target=domain,
                 data={"name": name, "project": project.pk}, ip=ip)
    growth_event_record(event=FIRST_DOMAIN, user=actor, workspace=project.workspace_id)
    return domain


@transaction.atomic
def domain_update(*, project, domain_id: str, actor=None, ip: str = "", **changes) -> Domain:
    """PATCH: `redirect_to` (another domain of the project, or null) and `git_branch` (or null)."""
    domain = domain_get(project=project, domain_id=domain_id)
    domain = Domain.objects.select_for_update().get(pk=domain.pk)
    if "redirect_to" in changes:
        domain.redirect_to = _redirect_target(project, domain.name, changes["redirect_to"])
        if domain.redirect_to and Domain.objects.filter(project=project, redirect_to=domain.name).exists():
            raise ValidationFailed("redirectTo: other domains redirect here; a domain they point at cannot "
                                   "redirect.", details={"redirectTo": ["Other domains redirect to this one."]})
        if domain.redirect_to:
            domain.primary = False
    if "git_branch" in changes:
        domain.git_branch = _git_branch(changes["git_branch"])
    domain.save()
    audit_record(workspace=project.workspace, actor=actor, action="domain.updated", target=domain,
                 data={"name": domain.name, "redirect_to": domain.redirect_to, "git_branch": domain.git_branch},
                 ip=ip)
    return domain


@transaction.atomic
def domain_set_primary(*, project, domain_id: str, actor=None, ip: str = "") -> Domain:
    """The project's other domains (those without a redirect or branch of their own) redirect here (308)."""
    domain = domain_get(project=project, domain_id=domain_id)
    if not domain.verified:
        raise Conflict(f"{domain.name} is not verified yet; verify it before making it primary.",
                       code="domain_not_verified")
    # saved one by one (a project has a handful): each save tells the edge's host cache what changed
    for other in Domain.objects.select_for_update().filter(project=project).exclude(pk=domain.pk):
        if other.primary or other.redirect_to == domain.name:  # a redirect to the new primary is now implied
            other.primary = False
            other.redirect_to = "" if other.redirect_to == domain.name else other.redirect_to
            other.save(update_fields=["primary", "redirect_to"])
    domain.primary, domain.redirect_to = True, ""
    domain.save(update_fields=["primary", "redirect_to"])
    audit_record(workspace=project.workspace, actor=actor, action="domain.primary", target=domain,
                 data={"name": domain.name}, ip=ip)
    return domain


def _delete(domain: Domain) -> None:
    """Delete `domain`, and the redirects of its project's other domains to it."""
    for other in Domain.objects.filter(project_id=domain.project_id, redirect_to=domain.name):
        other.redirect_to = ""
        other.save(update_fields=["redirect_to"])
    domain.delete()


@transaction.atomic
def domain_remove(*, project, domain_id: str, actor=None, ip: str = "") -> None:
    domain = domain_get(project=project, domain_id=domain_id)
    audit_record(workspace=project.workspace, actor=actor, action="domain.removed", target=domain,
                 data={"name": domain.name}, ip=ip)
    _delete(domain)


# Checking ---------------------------------------------------------------------------------

FOUND_MAX_RECORDS, FOUND_MAX_LENGTH = 32, 255  # what a check keeps of whatever a zone publishes


def _rdata_value(rdtype: str, rdata) -> str:
    if rdtype == "TXT":
        value = b"".join(rdata.strings).decode("utf-8", errors="replace")
        value = "".join(c if c.isprintable() else "\ufffd" for c in value)  # stored as JSON: no NUL, no controls
    elif rdtype == "CNAME":
        value = rdata.target.to_text().rstrip(".").lower()
    else:
        value = rdata.address
    return value[:FOUND_MAX_LENGTH]


def dns_lookup(domain: Domain) -> tuple[list[dict], str]:
    """What DNS says about `domain` now: `[{"type", "value"}]` of its TXT challenge, CNAME, A and AAAA
    records, and the resolver's failure ("" when every query was answered, even with nothing)."""
    import dns.exception  # here: dnspython loads only in the process that looks a domain up
    import dns.resolver

    resolver = outbound.outbound_resolver()  # the one resolver configuration (OUTBOUND_DNS_SERVERS)
    found, errors = [], []
    for qname, rdtype in ((challenge_name(domain), "TXT"), (domain.name, "CNAME"), (domain.name, "A"),
                          (domain.name, "AAAA")):
        try:
            answer = resolver.resolve(f"{qname}.", rdtype, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            continue
        except dns.exception.DNSException as exc:
            errors.append(f"{rdtype} {qname}: {type(exc).__name__}")
            continue
        for rdata in answer:
            entry = {"type": rdtype, "value": _rdata_value(rdtype, rdata)}
            if entry not in found and len(found) < FOUND_MAX_RECORDS:
                found.append(entry)
    return found, "; ".join(errors)[:200]


def _matches(domain: Domain, found: list[dict], *, contested: bool) -> bool:
    """Whether DNS carries one of the domain's records. A CNAME or an address points at the platform, not at a
    project: while other projects claim the name too (`contested`), only the TXT challenge with this claim's own
    token tells the claimants apart."""
    records = domain_verification(domain)
    if contested:
        records = [r for r in records if r["type"] == "TXT"]
    expected = {(r["type"], r["value"].lower()) for r in records}
    return any((f["type"], f["value"].lower()) in expected for f in found)


def _claims_void(domain: Domain, others: list[Domain], ip: str) -> None:
    """`domain` took its name: the other projects' pending claims on it are removed (audited in their
    workspaces)."""
    for other in others:
        audit_record(workspace=other.project.workspace, actor=None, action="domain.removed", target=other,
                     data={"name": other.name, "reason": "verified_by_another_project"}, ip=ip)
        _delete(other)


def _next_check(status: str, failures: int, now):
    if status == Domain.Status.VERIFIED:
        return now + timedelta(seconds=settings.DOMAINS_RECHECK_VERIFIED_SECONDS)
    delay = settings.DOMAINS_RECHECK_MIN_SECONDS * 2 ** min(max(failures - 1, 0), 30)
    return now + timedelta(seconds=min(delay, settings.DOMAINS_RECHECK_MAX_SECONDS))


def domain_check(*, domain: Domain, actor=None, ip: str = "") -> Domain:
    """Ask DNS (outside any transaction), then record what was found and the status it implies: a match
    verifies; no match turns a verified domain `misconfigured` (audited as `domain.misconfigured`, the signal
    alerts read) and leaves the others as they were; a resolver failure changes no status."""
    found, error = dns_lookup(domain)
    with transaction.atomic():
        # every claim on the name, locked in one order: two claims verified at once are decided one after the other
        claims = list(Domain.objects.select_for_update().select_related("project__workspace")
                      .filter(name=domain.name).order_by("pk"))
        mine = [c for c in claims if c.pk == domain.pk]
        if not mine:
            raise NotFound("No such domain.")  # removed meanwhile (another project verified the name first)
        domain, others = mine[0], [c for c in claims if c.pk != domain.pk]
        now = timezone.now()
        before = domain.status
        held_elsewhere = any(c.status != Domain.Status.PENDING for c in others)
        if not held_elsewhere and _matches(domain, found, contested=bool(others)):
            status = Domain.Status.VERIFIED
        elif error and not found:
            status = before
        elif before == Domain.Status.VERIFIED:
            status = Domain.Status.MISCONFIGURED
        else:
            status = before
        domain.check_failures = 0 if status == Domain.Status.VERIFIED else domain.check_failures + 1
        domain.last_check_at, domain.last_check_found, domain.last_check_error = now, found, error
        domain.next_check_at = _next_check(status, domain.check_failures, now)
        if status != before:
            domain.status, domain.status_changed_at = status, now
            if status == Domain.Status.VERIFIED and domain.verified_at is None:
                domain.verified_at = now
            audit_record(workspace=domain.project.workspace, actor=actor, action=f"domain.{status}", target=domain,
                         data={"name": domain.name, "from": before, "to": status, "found": found}, ip=ip)
            if status == Domain.Status.VERIFIED:
                _claims_void(domain, others, ip)  # before the save: the name is held by one project only
            domain.save()
        else:  # a check only: no signal listener needs to act on it (caddy.CHECK_FIELDS)
            domain.save(update_fields=["check_failures", "last_check_at", "last_check_found", "last_check_error",
                                       "next_check_at"])
    return domain


def domain_verify(*, project, domain_id: str, actor=None, ip: str = "") -> Domain:
    """Check one domain now (the API's verify): the domain, whatever was found."""
    return domain_check(domain=domain_get(project=project, domain_id=domain_id), actor=actor, ip=ip)


def domains_recheck(*, now=None, limit: int | None = None) -> int:
    """Beat: check the domains whose next check is due (pending and misconfigured ones with backoff,
    verified ones daily); how many were checked."""
    now = now or timezone.now()
    due = list(Domain.objects.filter(next_check_at__lte=now).order_by("next_check_at")
               .values_list("pk", flat=True)[: limit or settings.DOMAINS_RECHECK_BATCH])
    checked = 0
    for pk in due:
        domain = Domain.objects.filter(pk=pk).first()
        if domain is None:
            continue  # removed meanwhile
        try:
            domain_check(domain=domain)
        except NotFound:
            continue  # removed meanwhile: another project verified the name
        except Exception:  # noqa: BLE001 - one domain's failure must not stop the sweep
            logger.exception("Domain check of %s failed", domain.name)
            continue
        checked += 1
    return checked


def domain_claims_expire(*, now=None) -> int:
    """Beat: remove pending domains (never verified) older than DOMAIN_CLAIM_EXPIRY_DAYS, audited as
    `domain.expired`; how many were removed. Verified and misconfigured domains stay."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.DOMAIN_CLAIM_EXPIRY_DAYS)
    expired = 0
    stale = Domain.objects.filter(status=Domain.Status.PENDING, verified_at__isnull=True, created_at__lt=cutoff)
    for pk in list(stale.values_list("pk", flat=True)[: settings.DOMAINS_RECHECK_BATCH * 10]):
        with transaction.atomic():
            domain = (Domain.objects.select_for_update().select_related("project__workspace")
                      .filter(pk=pk, status=Domain.Status.PENDING).first())
            if domain is None:
                continue  # verified or removed meanwhile
            audit_record(workspace=domain.project.workspace, actor=None, action="domain.expired", target=domain,
                         data={"name": domain.name, "created_at": domain.created_at.isoformat()})
            _delete(domain)
        expired += 1
    return expired
