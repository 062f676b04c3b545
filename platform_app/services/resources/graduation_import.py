"""Graduation, the redeeming side: a bundle's project made in a workspace (docs/graduation.md).

Single use: on the exporting platform the export's row says whether it was redeemed and until when it is valid; on
any platform a redemption inserts a row keyed by the export id (unique), so a bundle makes one project per
platform. Every part is checked by its API's serializer before anything is made (graduation_validate), then made
by its service, in one transaction: a part a service refuses as bad input, or past the workspace's plan, refuses
the whole bundle and nothing stays; what only this platform's state or policy refuses (a domain another project
holds, a drain address its outbound guard refuses) is reported in `skipped`.
"""
import hashlib
import logging
import secrets
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from config.errors import ApplicationError, Conflict, NotFound
from config.ids import new_id
from config.outbound import OutboundRefused
from platform_app.models import Graduation, GraduationRedemption, Project
from platform_app.services.automation import alerts as alert_services
from platform_app.services.automation import cron as cron_services
from platform_app.services.automation import drains as drain_services
from platform_app.services.domains import domains as domain_services
from platform_app.services.env import env as env_services
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.projects.projects import DNS_LABEL
from platform_app.services.providers.git_cli import GitCommandFailed, run_git
from platform_app.services.resources import components as component_services
from platform_app.services.resources.graduation_bundle import AlreadyRedeemed, BundleInvalid, Expired, Seal, bundle_open
from platform_app.services.resources.graduation_validate import (Part, bundle_parts, moment, project_fields,
                                                                 refusal, repository_data, text)
from platform_app.services.teams.audit import audit_record

logger = logging.getLogger(__name__)

# The bundle's key of each part, as `imported`, `skipped` and `secrets` name it.
KINDS = {"environments": "environments", "envVars": "env_vars", "domains": "domains", "cronJobs": "cron_jobs",
         "logDrains": "log_drains", "alertRules": "alert_rules", "components": "components"}


def _free_slug(wanted: str, name: str) -> str:
    if DNS_LABEL.match(wanted or "") and not Project.objects.filter(slug=wanted).exists():
        return wanted
    base = (slugify(wanted or name)[:50].strip("-")) or "project"
    candidate = base
    while Project.objects.filter(slug=candidate).exists():
        candidate = f"{base}-{secrets.token_hex(3)}"
    return candidate


def _repository_restore(data: bytes, *, workspace, slug: str, branch: str) -> Path:
    """A bare repository hosted for `workspace`, filled from the bundle's git bundle: its path."""
    root = Path(settings.GIT_HOSTED_ROOT) / workspace.pk
    root.mkdir(parents=True, exist_ok=True)
    bare = root / f"{slug[:40]}-{secrets.token_hex(4)}.git"
    try:
        with tempfile.TemporaryDirectory(prefix="redeem-") as tmp:
            source = Path(tmp) / "repo.bundle"
            source.write_bytes(data)
            run_git(["init", "--quiet", "--bare", f"--initial-branch={branch}", str(bare)])
            run_git(["fetch", "--quiet", str(source), "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                    cwd=bare)
    except GitCommandFailed as exc:
        shutil.rmtree(bare, ignore_errors=True)
        logger.info("graduation repository refused: %s", exc.message)
        raise BundleInvalid("The bundle's repository is not a git bundle this platform can read.")
    return bare


class _Report:
    def __init__(self):
        self.imported = {kind: 0 for kind in KINDS.values()}
        self.skipped: list[dict] = []
        self.secrets = {"cron_jobs": [], "log_drains": [], "alert_rules": []}

    def attempt(self, part: Part, make):
        """`make()` in a savepoint. What this platform's state or policy refuses is reported; anything else the
        service refuses refuses the bundle."""
        kind = KINDS[part.resource]
        try:
            with transaction.atomic():
                result = make()
        except (Conflict, OutboundRefused) as exc:
            self.skipped.append({"kind": kind, "name": part.name, "reason": exc.message})
            return None
        except ApplicationError as exc:
            raise refusal(part, exc)
        except IntegrityError:  # the bundle names one thing twice
            self.skipped.append({"kind": kind, "name": part.name, "reason": "Already in the bundle."})
            return None
        self.imported[kind] += 1
        if kind in self.secrets:
            self.secrets[kind].append({"id": result[0].pk, "secret": result[1]})
        return result


def _import_parts(project: Project, parts: dict[str, list[Part]], report: _Report, *, actor, ip: str) -> None:
    """Each part through its own service, in the order of the bundle's parts (environments before the variables
    that target them, domains before their redirects)."""
    make = {
        "environments": lambda d: env_services.environment_create(project=project, name=d["name"],
                                                                  branch_pattern=d["branch_pattern"]),
        "envVars": lambda d: env_services.env_var_create(project=project, key=d["key"], value=d["value"],
                                                         type=d["type"], targets=d["target"], branch=d["branch"],
                                                         actor=actor, ip=ip),
        "domains": lambda d: domain_services.domain_add(project=project, name=d["name"],
                                                        git_branch=d.get("git_branch"), actor=actor, ip=ip),
        "cronJobs": lambda d: cron_services.cron_job_create(project=project, schedule=d["schedule"], path=d["path"],
                                                            timezone_name=d["timezone"], branch=d["branch"],
                                                            enabled=d["enabled"], retries=d["retries"]),
        "logDrains": lambda d: drain_services.drain_create(project=project, url=d["url"], format=d["format"],
                                                           sources=d["sources"], environments=d["environments"],
                                                           sampling_rate=d["sampling_rate"]),
        "alertRules": lambda d: alert_services.alert_rule_create(project=project, name=d["name"], metric=d["metric"],
                                                                 threshold=d.get("threshold"),
                                                                 window_minutes=d["window_minutes"],
                                                                 channels=d["channels"]),
        "components": lambda d: component_services.component_create(project=project, actor=actor, ip=ip, **d),
    }
    domains = []
    for resource, items in parts.items():
        for part in items:
            made = report.attempt(part, lambda part=part: make[resource](part.data))
            if resource == "domains" and made is not None:
                domains.append((part, made))
    for part, made in domains:
        if part.data.get("redirect_to"):
            try:
                with transaction.atomic():
                    domain_services.domain_update(project=project, domain_id=made.pk,
                                                  redirect_to=part.data["redirect_to"], actor=actor, ip=ip)
            except ApplicationError as exc:
                report.skipped.append({"kind": "domain_redirects", "name": made.name, "reason": exc.message})
        if part.extra.get("primary"):
            report.skipped.append({"kind": "domain_primary", "name": made.name,
                                   "reason": "Domains arrive unverified: verify it, then make it primary again."})


def _claim(*, code: str, bundle: str | None) -> tuple[Graduation | None, str]:
    """The export a code names here (None for a bundle made elsewhere) and the bundle to redeem; the 404, 409,
    410 and 400 of the rules."""
    graduation = Graduation.objects.filter(code_hash=sha256_hex(code)).first()
    if graduation is None:
        if not bundle:
            raise NotFound("No such redeem code.")
        return None, bundle
    if graduation.redeemed_at is not None:
        raise AlreadyRedeemed()
    if graduation.expires_at <= timezone.now() or not graduation.bundle:
        raise Expired()
    if bundle and hashlib.sha256(bundle.strip().encode()).hexdigest() != graduation.bundle_sha256:
        raise BundleInvalid("The bundle is not the one this redeem code was made with: it was changed.")
    return graduation, graduation.bundle


def graduation_redeem(*, workspace, code: str, inputs: dict, bundle: str | None = None, actor=None,
                      ip: str = "") -> tuple[Project, dict]:
    """Make the bundle's project in `workspace` (the caller is its admin: checked by the caller). `inputs`: the
    API's input serializer of each part, by the bundle's key (`api/resources/graduate_inputs.py`). The project and
    what was imported, skipped, and the secrets of what was made anew (cron jobs, drains, alert rules: shown once)."""
    code = (code or "").strip()
    graduation, token = _claim(code=code, bundle=bundle)
    payload = bundle_open(code=code, bundle=token)
    if graduation is None:
        if payload.get("origin") == settings.SITE_URL:
            raise NotFound("No such redeem code.")  # made here, yet no export of this code: it was deleted
        if moment(payload.get("expiresAt")) <= timezone.now():
            raise Expired()
        if GraduationRedemption.objects.filter(bundle_id=payload["id"]).exists():
            raise AlreadyRedeemed()
    seal = Seal(code, payload["id"])
    fields = project_fields(payload, seal)
    parts = bundle_parts(payload, seal, inputs=inputs)
    slug = _free_slug(text(payload["project"], "slug", 63), fields["name"])
    origin = text(payload, "origin", 500)
    repository = None
    if payload["git"].get("kind") == "hosted":
        repository = _repository_restore(repository_data(payload), workspace=workspace, slug=slug,
                                         branch=fields["production_branch"])
        fields["git_url"] = repository.as_uri()
    report = _Report()
    try:
        with transaction.atomic():
            if graduation is not None:
                locked = Graduation.objects.select_for_update().get(pk=graduation.pk)
                if locked.redeemed_at is not None:
                    raise AlreadyRedeemed()
                locked.redeemed_at = timezone.now()
                locked.save(update_fields=["redeemed_at"])
            try:
                with transaction.atomic():
                    redemption = GraduationRedemption.objects.create(
                        bundle_id=payload["id"], origin=origin, graduation=graduation, workspace=workspace,
                        redeemed_by=actor if getattr(actor, "is_authenticated", False) else None)
            except IntegrityError:
                raise AlreadyRedeemed()
            try:
                with transaction.atomic():
                    project = Project.objects.create(id=new_id("prj"), workspace=workspace, slug=slug, **fields)
            except IntegrityError:  # the slug was taken meanwhile
                raise Conflict("This project slug is taken.", code="slug_taken")
            GraduationRedemption.objects.filter(pk=redemption.pk).update(project=project)
            audit_record(workspace=workspace, actor=actor, action="project.created", target=project,
                         data={"name": project.name, "slug": slug, "source": project.source,
                               "graduation": payload["id"], "origin": redemption.origin}, ip=ip)
            _import_parts(project, parts, report, actor=actor, ip=ip)
    except BaseException:
        if repository is not None:
            shutil.rmtree(repository, ignore_errors=True)
        raise
    return project, {"imported": report.imported, "skipped": report.skipped, "secrets": report.secrets}
