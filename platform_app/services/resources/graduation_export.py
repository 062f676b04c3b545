"""Graduation, the exporting side: a project's bundle (kept until it expires) and its one-time redeem code
(docs/graduation.md). Each part is written with the field names of the API that makes it, so the redeeming
platform reads it with that API's serializer."""
import base64
import hashlib
import json
import logging
import secrets
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from config.errors import Conflict
from config.ids import new_id
from platform_app.models import (AlertRule, Component, CronJob, Domain, Environment, EnvVar, Graduation, LogDrain,
                                 Project)
from platform_app.services.env.crypto import decrypt
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.providers.git_cli import GitCommandFailed, run_git
from platform_app.services.providers.git_urls import hosted_repo_path, is_local_url
from platform_app.services.resources.graduation_bundle import CODE_PREFIX, FORMAT, Seal, bundle_pack
from platform_app.services.teams.audit import audit_record

logger = logging.getLogger(__name__)

# The project's settings a bundle carries: (column, wire name, longest value).
SETTINGS = (("framework", "framework", 32), ("install_command", "installCommand", 500),
            ("build_command", "buildCommand", 500), ("output_directory", "outputDirectory", 200),
            ("start_command", "startCommand", 500), ("root_directory", "rootDirectory", 200))


def _git_source(project: Project, seal: Seal) -> tuple[dict, dict | None]:
    """The project's source as the bundle carries it, and a git bundle of its repository when hosted here."""
    if project.source == Project.Source.IMAGE:
        return {"kind": "image", "imageRef": project.image_ref}, None
    if project.git_provider and not project.git_url:
        return {"kind": "provider", "provider": project.git_provider, "repo": project.git_repo}, None
    path = hosted_repo_path(project.git_url, workspace=project.workspace)
    if path is not None:
        return {"kind": "hosted"}, _repository_bundle(path)
    if not project.git_url or is_local_url(project.git_url):
        return {"kind": "none"}, None
    if "@" in project.git_url.split("://", 1)[-1].split("/", 1)[0]:  # a credential in the URL: sealed
        return {"kind": "url", "urlSealed": seal.seal(project.git_url)}, None
    return {"kind": "url", "url": project.git_url}, None


def _repository_bundle(path: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="graduate-") as tmp:
        out = Path(tmp) / "repo.bundle"
        try:
            run_git(["bundle", "create", "--quiet", str(out), "--all"], cwd=path)
        except GitCommandFailed as exc:
            logger.warning("git bundle of %s failed: %s", path, exc.message)
            raise Conflict("The project's hosted repository could not be bundled (is it empty?).",
                           code="repository_unbundled")
        data = out.read_bytes()
    if len(data) > settings.GRADUATION_REPOSITORY_MAX_BYTES:
        raise Conflict(f"The project's hosted repository is {len(data)} bytes as a git bundle; a graduation carries "
                       f"at most {settings.GRADUATION_REPOSITORY_MAX_BYTES}.", code="repository_too_large",
                       details={"maxBytes": settings.GRADUATION_REPOSITORY_MAX_BYTES, "bytes": len(data)})
    return {"gitBundle": base64.b64encode(data).decode(), "sha256": hashlib.sha256(data).hexdigest()}


def _payload(project: Project, seal: Seal, export_id: str, now: datetime, expires: datetime) -> dict:
    git, repository = _git_source(project, seal)
    environments = [{"name": e.name, "branchPattern": e.branch_pattern}
                    for e in Environment.objects.filter(project=project, builtin=False).order_by("name")]
    env_vars = [{"key": v.key, "type": v.type, "target": v.targets, "branch": v.branch,
                 "value": seal.seal(decrypt(v.value_encrypted))}
                for v in EnvVar.objects.filter(project=project).order_by("key", "created_at")]
    domains = [{"name": d.name, "redirectTo": d.redirect_to, "gitBranch": d.git_branch, "primary": d.primary}
               for d in Domain.objects.filter(project=project).order_by("created_at")]
    cron = [{"schedule": j.schedule, "timezone": j.timezone, "path": j.path, "branch": j.branch, "enabled": j.enabled,
             "retries": j.retries} for j in CronJob.objects.filter(project=project).order_by("created_at")]
    drains = [{"urlSealed": seal.seal(d.url), "format": d.format, "sources": d.sources,
               "environments": d.environments, "samplingRate": d.sampling_rate}
              for d in LogDrain.objects.filter(project=project).order_by("created_at")]
    rules = [{"name": r.name, "metric": r.metric, "threshold": r.threshold, "windowMinutes": r.window_minutes,
              "channelsSealed": seal.seal(json.dumps(r.channels))}
             for r in AlertRule.objects.filter(project=project).order_by("created_at")]
    components = [{"name": c.name, "kind": c.kind, "startCommand": c.start_command, "buildCommand": c.build_command,
                   "instanceSize": c.instance_size, "instances": c.instances, "healthCheckPath": c.health_check_path}
                  for c in Component.objects.filter(project=project).order_by("created_at")]
    return {
        "format": FORMAT, "id": export_id, "origin": settings.SITE_URL, "createdAt": now.isoformat(),
        "expiresAt": expires.isoformat(),
        "project": {"name": project.name, "slug": project.slug, "source": project.source,
                    "template": project.template, "productionBranch": project.production_branch,
                    "autoDeploy": project.auto_deploy,
                    **{wire: getattr(project, name) for name, wire, _ in SETTINGS}},
        "git": git, "repository": repository, "environments": environments, "envVars": env_vars,
        "domains": domains, "cronJobs": cron, "logDrains": drains, "alertRules": rules, "components": components,
    }


def graduation_export(*, project: Project, actor=None, ip: str = "") -> tuple[Graduation, str]:
    """Export `project`: its bundle (kept until it expires) and its redeem code (shown once)."""
    code = CODE_PREFIX + secrets.token_urlsafe(32)
    export_id = new_id("grd")
    now = timezone.now()
    expires = now + timedelta(hours=settings.GRADUATION_TTL_HOURS)
    bundle = bundle_pack(code=code, export_id=export_id,
                         payload=_payload(project, Seal(code, export_id), export_id, now, expires))
    graduation = Graduation.objects.create(id=export_id, workspace=project.workspace, project=project,
                                           created_by=actor if getattr(actor, "is_authenticated", False) else None,
                                           code_hash=sha256_hex(code), bundle=bundle,
                                           bundle_sha256=hashlib.sha256(bundle.encode()).hexdigest(),
                                           expires_at=expires, created_at=now)
    audit_record(workspace=project.workspace, actor=actor, action="project.graduated", target=project,
                 data={"graduation": export_id, "expiresAt": expires.isoformat()}, ip=ip)
    return graduation, code


def graduations_of(*, project: Project):
    return Graduation.objects.filter(project=project)


def graduations_purge(*, now=None) -> int:
    """Empty the stored bundles of expired exports (the rows stay: a late redeem is 410)."""
    return Graduation.objects.filter(expires_at__lt=now or timezone.now()).exclude(bundle="").update(bundle="")


def graduation_status(graduation: Graduation) -> str:
    if graduation.redeemed_at:
        return "redeemed"
    return "expired" if graduation.expires_at <= timezone.now() else "waiting"
