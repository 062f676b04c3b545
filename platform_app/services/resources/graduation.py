"""Graduation: a project exported as a bundle with a one-time redeem code, and redeemed into a workspace of this
platform or of another instance of it (docs/graduation.md).

The bundle is one string, `svcgrad1.<export id>.<payload>.<signature>`: the payload is base64url JSON (settings,
environments, variables, domains, cron jobs, log drains, alert rules, components, the Git source, and a git bundle
of a repository this platform hosts); the signature is an HMAC-SHA256 of it under a key derived (HKDF-SHA256) from
the redeem code and the export id. So any instance of the platform checks a bundle with what the bundle and the code
carry, and nobody without the code can change a byte unnoticed. What is secret in it (variables' values, a Git URL
carrying a credential, log drains' URLs, alert rules' channels) is sealed with Fernet under a second key derived
from the code: the bundle alone reveals no secret. The code is shown once and kept as its SHA-256.

Single use: on the exporting platform the export's row says whether it was redeemed and until when it is valid; on
any platform a redemption inserts a row keyed by the export id (unique), so a bundle makes one project per
platform. A bundle made elsewhere is taken for what it is, untrusted input: every part goes through the services
that check it as if a user typed it, and what they refuse is reported (`skipped`), not imported.
"""
import base64
import binascii
import hashlib
import hmac
import json
import logging
import re
import secrets
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.apps import apps
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from config.errors import ApplicationError, Conflict, NotFound, ValidationFailed
from config.ids import new_id
from platform_app.models import (AlertRule, CronJob, Domain, Environment, EnvVar, Graduation, GraduationRedemption,
                                 LogDrain, Project)
from platform_app.services.automation import alerts as alert_services
from platform_app.services.automation import cron as cron_services
from platform_app.services.automation import drains as drain_services
from platform_app.services.domains import domains as domain_services
from platform_app.services.env import env as env_services
from platform_app.services.env.crypto import decrypt
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.projects.projects import DNS_LABEL, FRAMEWORKS, IMAGE_REF, root_directory_check
from platform_app.services.providers.git_cli import GitCommandFailed, run_git
from platform_app.services.providers.git_urls import hosted_repo_path, is_local_url
from platform_app.services.teams.audit import audit_record

logger = logging.getLogger(__name__)

FORMAT = "svc-graduation/1"
TOKEN_PREFIX = "svcgrad1"
CODE_PREFIX = "svcg_"
PROVIDERS = ("git-a", "git-b", "git-c")
PROVIDER_REPO = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+$")
BRANCH = re.compile(r"^[^\x00-\x20~^:?*\[\\]+$")
SETTINGS = (("framework", "framework", 32), ("install_command", "installCommand", 500),
            ("build_command", "buildCommand", 500), ("output_directory", "outputDirectory", 200),
            ("start_command", "startCommand", 500), ("root_directory", "rootDirectory", 200))


class BundleInvalid(ValidationFailed):
    code = "bundle_invalid"
    default_message = "The bundle is not valid for this redeem code: it was changed, or made with another code."


class Expired(ApplicationError):
    status, code, default_message = 410, "graduation_expired", "This redeem code has expired."


class AlreadyRedeemed(Conflict):
    code, default_message = "already_redeemed", "This redeem code was already used."


# Keys, seal, signature ----------------------------------------------------------------------------

def _key(code: str, export_id: str, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=export_id.encode(),
                info=f"{FORMAT} {purpose}".encode()).derive(code.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Seal:
    """Fernet under the one-time key a redeem code gives an export: what only the code's holder may read."""

    def __init__(self, code: str, export_id: str):
        self._fernet = Fernet(base64.urlsafe_b64encode(_key(code, export_id, "seal")))

    def seal(self, value: str) -> str:
        return self._fernet.encrypt(value.encode()).decode()

    def open(self, token) -> str:
        if not isinstance(token, str):
            raise BundleInvalid()
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except (InvalidToken, UnicodeDecodeError):
            raise BundleInvalid()


def _signature(code: str, export_id: str, payload: str) -> str:
    return _b64(hmac.new(_key(code, export_id, "sign"), payload.encode(), hashlib.sha256).digest())


def bundle_pack(*, code: str, export_id: str, payload: dict) -> str:
    body = _b64(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{TOKEN_PREFIX}.{export_id}.{body}.{_signature(code, export_id, body)}"


def bundle_open(*, code: str, bundle: str) -> dict:
    """The payload of a bundle the code signed; 400 `bundle_invalid` for anything else (checked before the
    payload is parsed)."""
    parts = bundle.strip().split(".") if isinstance(bundle, str) else []
    if len(parts) != 4 or parts[0] != TOKEN_PREFIX or not re.fullmatch(r"grd_[a-z0-9]{1,36}", parts[1]):
        raise BundleInvalid("This is not a graduation bundle.")
    _, export_id, body, signature = parts
    if not hmac.compare_digest(_signature(code, export_id, body), signature):
        raise BundleInvalid()
    try:
        payload = json.loads(_unb64(body))
    except (ValueError, binascii.Error, RecursionError):
        raise BundleInvalid()
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or payload.get("id") != export_id:
        raise BundleInvalid("The bundle's format is not one this platform reads.")
    return payload


# Export -------------------------------------------------------------------------------------------

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


def _components(project: Project) -> list[dict]:
    """A project's components, when this platform has them: their plain fields, whatever they are."""
    try:
        model = apps.get_model("platform_app", "Component")
    except LookupError:
        return []
    plain = [f for f in model._meta.concrete_fields
             if not f.is_relation and not f.primary_key and f.name not in ("created_at", "updated_at", "status")]
    items = []
    for component in model._default_manager.filter(project=project):
        item = {}
        for field in plain:
            value = getattr(component, field.name)
            if isinstance(value, str | int | float | bool | list | dict) or value is None:
                item[field.name] = value
        items.append(item)
    return items


def _payload(project: Project, seal: Seal, export_id: str, now: datetime, expires: datetime) -> dict:
    git, repository = _git_source(project, seal)
    environments = [{"name": e.name, "branchPattern": e.branch_pattern}
                    for e in Environment.objects.filter(project=project, builtin=False).order_by("name")]
    env_vars = [{"key": v.key, "type": v.type, "targets": v.targets, "branch": v.branch,
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
    return {
        "format": FORMAT, "id": export_id, "origin": settings.SITE_URL, "createdAt": now.isoformat(),
        "expiresAt": expires.isoformat(),
        "project": {"name": project.name, "slug": project.slug, "source": project.source,
                    "template": project.template, "productionBranch": project.production_branch,
                    "autoDeploy": project.auto_deploy,
                    **{wire: getattr(project, name) for name, wire, _ in SETTINGS}},
        "git": git, "repository": repository, "environments": environments, "envVars": env_vars,
        "domains": domains, "cronJobs": cron, "logDrains": drains, "alertRules": rules,
        "components": _components(project),
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


# Redeem: reading the payload -------------------------------------------------------------------

def _text(data: dict, key: str, limit: int, *, default: str = "") -> str:
    value = data.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise BundleInvalid(f"The bundle's `{key}` is not valid.")
    return value


def _items(payload: dict, key: str) -> list[dict]:
    value = payload.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BundleInvalid(f"The bundle's `{key}` is not valid.")
    return value


def _moment(value) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise BundleInvalid("The bundle's `expiresAt` is not valid.")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _free_slug(wanted: str, name: str) -> str:
    if DNS_LABEL.match(wanted or "") and not Project.objects.filter(slug=wanted).exists():
        return wanted
    base = (slugify(wanted or name)[:50].strip("-")) or "project"
    candidate = base
    while Project.objects.filter(slug=candidate).exists():
        candidate = f"{base}-{secrets.token_hex(3)}"
    return candidate


def _project_fields(payload: dict, seal: Seal) -> dict:
    """The new project's columns from the bundle, each checked as the projects service checks a user's."""
    p = payload.get("project")
    git = payload.get("git")
    if not isinstance(p, dict) or not isinstance(git, dict):
        raise BundleInvalid("The bundle names no project.")
    name = _text(p, "name", 100).strip() or "Graduated project"
    fields = {"name": name, "production_branch": _text(p, "productionBranch", 200, default="main") or "main",
              "auto_deploy": p.get("autoDeploy") is not False}
    if not BRANCH.match(fields["production_branch"]) or fields["production_branch"].startswith("-"):
        raise BundleInvalid("The bundle's production branch is not a branch name.")
    for column, wire, limit in SETTINGS:
        fields[column] = _text(p, wire, limit)
    if fields["framework"] not in FRAMEWORKS:
        raise BundleInvalid(f"The bundle's framework `{fields['framework']}` is unknown here.")
    fields["root_directory"] = root_directory_check(fields["root_directory"])
    kind = git.get("kind")
    if kind == "image":
        image_ref = _text(git, "imageRef", 300)
        if not IMAGE_REF.match(image_ref):
            raise BundleInvalid("The bundle's image reference is not valid.")
        fields.update(source=Project.Source.IMAGE, image_ref=image_ref)
    elif kind == "provider":
        provider, repo = _text(git, "provider", 16), _text(git, "repo", 200)
        if provider not in PROVIDERS or not PROVIDER_REPO.match(repo):
            raise BundleInvalid("The bundle's provider repository is not valid.")
        fields.update(source=Project.Source.GIT, git_provider=provider, git_repo=repo)
    elif kind == "url":
        url = seal.open(git["urlSealed"]) if git.get("urlSealed") else _text(git, "url", 500)
        if len(url) > 500 or is_local_url(url) or not url.lower().startswith(("https://", "http://")):
            raise BundleInvalid("The bundle's Git URL is not an http(s) URL.")
        fields.update(source=Project.Source.GIT, git_url=url)  # the outbound guard checks it at every build
    elif kind == "hosted":
        template = _text(p, "template", 64)
        fields.update(source=Project.Source.TEMPLATE if template else Project.Source.GIT, template=template)
    elif kind != "none":
        raise BundleInvalid("The bundle's Git source is not one this platform knows.")
    return fields


def _repository_restore(payload: dict, *, workspace, slug: str, branch: str) -> Path:
    """A bare repository hosted for `workspace`, filled from the bundle's git bundle: its path."""
    repository = payload.get("repository")
    if not isinstance(repository, dict) or not isinstance(repository.get("gitBundle"), str):
        raise BundleInvalid("The bundle carries no repository for its hosted Git source.")
    try:
        data = base64.b64decode(repository["gitBundle"], validate=True)
    except (binascii.Error, ValueError):
        raise BundleInvalid("The bundle's repository is not valid.")
    if hashlib.sha256(data).hexdigest() != repository.get("sha256"):
        raise BundleInvalid("The bundle's repository does not match its digest.")
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


# Redeem: the parts -----------------------------------------------------------------------------

class _Report:
    def __init__(self):
        self.imported = {"environments": 0, "env_vars": 0, "domains": 0, "cron_jobs": 0, "log_drains": 0,
                         "alert_rules": 0, "components": 0}
        self.skipped: list[dict] = []
        self.secrets = {"cron_jobs": [], "log_drains": [], "alert_rules": []}

    def attempt(self, kind: str, name: str, make):
        """`make()` in a savepoint; a refusal is reported, not raised (the bundle may come from anywhere)."""
        try:
            with transaction.atomic():
                result = make()
        except ApplicationError as exc:
            self.skipped.append({"kind": kind, "name": name, "reason": exc.message})
            return None
        except (TypeError, ValueError, KeyError, AttributeError, IntegrityError) as exc:
            self.skipped.append({"kind": kind, "name": name, "reason": f"Not valid ({type(exc).__name__})."})
            return None
        self.imported[kind] += 1
        return result


def _import_parts(project: Project, payload: dict, seal: Seal, report: _Report, *, actor, ip: str) -> None:
    """Each part through its own service, in a savepoint of its own (`_Report.attempt`)."""

    def environment(item):
        return env_services.environment_create(project=project, name=_text(item, "name", 64),
                                               branch_pattern=_text(item, "branchPattern", 200))

    def env_var(item, value):
        return env_services.env_var_create(
            project=project, key=_text(item, "key", 256), value=value, type=_text(item, "type", 8, default="plain"),
            targets=[str(t) for t in item.get("targets") or []][:20], branch=_text(item, "branch", 200) or None,
            actor=actor, ip=ip)

    def domain(item):
        return domain_services.domain_add(project=project, name=_text(item, "name", 253),
                                          git_branch=_text(item, "gitBranch", 200) or None, actor=actor, ip=ip)

    def cron_job(item):
        return cron_services.cron_job_create(
            project=project, schedule=_text(item, "schedule", 120), path=_text(item, "path", 1024),
            timezone_name=_text(item, "timezone", 64, default="UTC") or "UTC", branch=_text(item, "branch", 200),
            enabled=item.get("enabled") is not False, retries=int(item.get("retries") or 0))

    def log_drain(item, url):
        return drain_services.drain_create(
            project=project, url=url, format=_text(item, "format", 8, default="json") or "json",
            sources=[str(x) for x in item.get("sources") or []][:8],
            environments=[str(x) for x in item.get("environments") or []][:20],
            sampling_rate=float(item.get("samplingRate", 1.0)))

    def alert_rule(item, channels):
        return alert_services.alert_rule_create(
            project=project, name=_text(item, "name", 100), metric=_text(item, "metric", 32),
            threshold=float(item.get("threshold")), window_minutes=int(item.get("windowMinutes")),
            channels=_channels(channels))

    for item in _items(payload, "environments"):
        report.attempt("environments", str(item.get("name"))[:64], lambda item=item: environment(item))
    for item in _items(payload, "envVars"):
        value = seal.open(item.get("value"))  # not a refusal: a value the code cannot open is a forged bundle
        report.attempt("env_vars", str(item.get("key"))[:256], lambda item=item, value=value: env_var(item, value))
    redirects, primary = [], None
    for item in _items(payload, "domains"):
        made = report.attempt("domains", str(item.get("name"))[:253], lambda item=item: domain(item))
        if made is not None and _text(item, "redirectTo", 253):
            redirects.append((made, item["redirectTo"]))
        if made is not None and item.get("primary") is True:
            primary = made
    for made, target in redirects:
        try:
            with transaction.atomic():
                domain_services.domain_update(project=project, domain_id=made.pk, redirect_to=target, actor=actor,
                                              ip=ip)
        except ApplicationError as exc:
            report.skipped.append({"kind": "domain_redirects", "name": made.name, "reason": exc.message})
    if primary is not None:
        report.skipped.append({"kind": "domain_primary", "name": primary.name,
                               "reason": "Domains arrive unverified: verify it, then make it primary again."})
    for item in _items(payload, "cronJobs"):
        made = report.attempt("cron_jobs", str(item.get("path"))[:1024], lambda item=item: cron_job(item))
        if made:
            report.secrets["cron_jobs"].append({"id": made[0].pk, "secret": made[1]})
    for item in _items(payload, "logDrains"):
        url = seal.open(item.get("urlSealed"))
        try:
            host = urlsplit(url).hostname or "?"  # not the whole address: it may carry a token
        except ValueError:
            host = "?"
        made = report.attempt("log_drains", host, lambda item=item, url=url: log_drain(item, url))
        if made:
            report.secrets["log_drains"].append({"id": made[0].pk, "secret": made[1]})
    for item in _items(payload, "alertRules"):
        channels = seal.open(item.get("channelsSealed"))
        made = report.attempt("alert_rules", str(item.get("name"))[:100],
                              lambda item=item, channels=channels: alert_rule(item, channels))
        if made:
            report.secrets["alert_rules"].append({"id": made[0].pk, "secret": made[1]})
    _import_components(project, _items(payload, "components"), report)


def _channels(text: str) -> list:
    channels = json.loads(text)
    if not isinstance(channels, list):
        raise ValueError("channels")
    return channels


def _import_components(project: Project, items: list[dict], report: _Report) -> None:
    if not items:
        return
    try:
        model = apps.get_model("platform_app", "Component")
    except LookupError:
        for item in items:
            report.skipped.append({"kind": "components", "name": str(item.get("name"))[:100],
                                   "reason": "This platform has no components."})
        return
    plain = {f.name: f for f in model._meta.concrete_fields
             if not f.is_relation and not f.primary_key and f.name not in ("created_at", "updated_at", "status")}

    def make(item):
        values = {name: value for name, value in item.items() if name in plain}
        component = model(project=project, **values)
        component.full_clean(exclude=[f.name for f in model._meta.fields if f.is_relation])
        component.save()
        return component

    for item in items:
        report.attempt("components", str(item.get("name"))[:100], lambda item=item: make(item))


# Redeem ------------------------------------------------------------------------------------------

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


def graduation_redeem(*, workspace, code: str, bundle: str | None = None, actor=None,
                      ip: str = "") -> tuple[Project, dict]:
    """Make the bundle's project in `workspace` (the caller is its admin: checked by the caller). The project and
    what was imported, skipped, and the secrets of what was made anew (cron jobs, drains, alert rules: shown once)."""
    code = (code or "").strip()
    graduation, token = _claim(code=code, bundle=bundle)
    payload = bundle_open(code=code, bundle=token)
    if graduation is None:
        if payload.get("origin") == settings.SITE_URL:
            raise NotFound("No such redeem code.")  # made here, yet no export of this code: it was deleted
        if _moment(payload.get("expiresAt")) <= timezone.now():
            raise Expired()
        if GraduationRedemption.objects.filter(bundle_id=payload["id"]).exists():
            raise AlreadyRedeemed()
    seal = Seal(code, payload["id"])
    fields = _project_fields(payload, seal)
    slug = _free_slug(_text(payload["project"], "slug", 63), fields["name"])
    repository = None
    if payload["git"].get("kind") == "hosted":
        repository = _repository_restore(payload, workspace=workspace, slug=slug, branch=fields["production_branch"])
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
                        bundle_id=payload["id"], origin=_text(payload, "origin", 500), graduation=graduation,
                        workspace=workspace, redeemed_by=actor if getattr(actor, "is_authenticated", False) else None)
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
            _import_parts(project, payload, seal, report, actor=actor, ip=ip)
    except BaseException:
        if repository is not None:
            shutil.rmtree(repository, ignore_errors=True)
        raise
    return project, {"imported": report.imported, "skipped": report.skipped, "secrets": report.secrets}


def graduation_status(graduation: Graduation) -> str:
    if graduation.redeemed_at:
        return "redeemed"
    return "expired" if graduation.expires_at <= timezone.now() else "waiting"

