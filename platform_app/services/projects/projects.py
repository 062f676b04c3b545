"""Projects: create from a Git repository, an image or a template; update; delete; auto-deploy status.

A project slug is a DNS label unique across the platform (it names `<slug>.<DEPLOY_DOMAIN>`), never a
deployment's address (`<slug>-<short id>`: 409 `slug_reserved`), never ending in `-tunnel` (the label of a
project's tunnel) and never holding `--` (`<component>--<slug>`): addresses.py.
A repository URL goes through the outbound guard (`git_urls`) and is read with `git ls-remote` before
anything is written: a refused or unreadable URL is 400 `git_unreachable` with one generic message, and no
project exists afterwards.
"""
import functools
import re
import secrets
import shutil
from pathlib import Path

from django.db import IntegrityError, connection, transaction
from django.utils.text import slugify

from config.errors import Conflict, NotFound, ServiceUnavailable, ValidationFailed
from config.ids import new_id
from config.rows import columns, select_one, table
from platform_app.models import Deployment, Project, ProjectGroup, SourceUpload
from platform_app.services.deployments.artifacts import artifact_name, source_delete
from platform_app.services.projects.addresses import TUNNEL_SUFFIX, deployment_at
from platform_app.services.teams.audit import audit_record
from platform_app.services.org.growth_events import FIRST_PROJECT, growth_event_record
from platform_app.services.providers.git_cli import git_ls_remote
from platform_app.services.providers.git_urls import git_remote_for_provider, git_remote_for_url, hosted_repo_path
from platform_app.services.projects.templates import template_get, template_repo_create

DNS_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# Docker-style reference: [registry[:port]/]name[:tag][@sha256:digest]
IMAGE_REF = re.compile(r"^(?:[a-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[\w][\w.-]{0,127})?"
                       r"(?:@sha256:[a-f0-9]{64})?$")
FRAMEWORKS = ("", "static", "vite", "nextjs", "astro", "create-react-app", "django", "flask", "fastapi", "node",
              "python", "docker")
SETTINGS_FIELDS = ("name", "framework", "install_command", "build_command", "output_directory", "start_command",
                   "root_directory", "production_branch", "auto_deploy")


@functools.cache
def _project_get_sql(vendor: str) -> str:
    q = connection.ops.quote_name
    pk, slug = q("id"), q("slug")
    # the id's match before the slug's, as two lookups in that order would find it
    return (f"SELECT {columns(Project, 'p')} FROM {table(Project)} p WHERE p.{q('workspace_id')} = %s "
            f"AND (p.{pk} = %s OR p.{slug} = %s) ORDER BY CASE WHEN p.{pk} = %s THEN 0 ELSE 1 END LIMIT 1")


def project_get(*, workspace, project_id: str) -> Project:
    """A project of this workspace by id or slug; 404 otherwise (also for other workspaces' projects). Written by
    hand (config/rows.py): every project route starts here."""
    row = select_one(_project_get_sql(connection.vendor), [workspace.pk, project_id, project_id, project_id], Project)
    if row is None:
        raise NotFound("No such project.")
    return row[0]


def _slug_free(slug: str) -> bool:
    """No project has it, it is no deployment's address (`<slug>-<short id>`, which the edge resolves first) and
    does not end in `-tunnel`."""
    return (not slug.endswith(TUNNEL_SUFFIX) and not Project.objects.filter(slug=slug).exists()
            and deployment_at(slug) is None)


def _slug_for(name: str, slug: str | None) -> str:
    if slug:
        if not DNS_LABEL.match(slug) or "--" in slug:  # `<component>--<slug>` names a project's component
            raise ValidationFailed("The slug must be a DNS label: a-z, 0-9 and -, 1 to 63 characters, no leading or "
                                   "trailing -, no --.", details={"slug": ["Not a DNS label."]})
        if slug.endswith(TUNNEL_SUFFIX):
            raise ValidationFailed(f"The slug cannot end in `{TUNNEL_SUFFIX}`: `<slug>{TUNNEL_SUFFIX}` is the address "
                                   "of a project's tunnel.", details={"slug": [f"Ends in {TUNNEL_SUFFIX}."]})
        if Project.objects.filter(slug=slug).exists():
            raise Conflict("This project slug is taken.", code="slug_taken", details={"slug": ["Already in use."]})
        if deployment_at(slug) is not None:
            raise Conflict("This slug is the address of a deployment (`<project>-<deployment id>`); choose another.",
                           code="slug_reserved", details={"slug": ["A deployment's address."]})
        return slug
    base = slugify(name)[:50].strip("-") or "project"
    candidate = base
    while not _slug_free(candidate):
        candidate = f"{base}-{secrets.token_hex(3)}"
    return candidate


def root_directory_check(value: str) -> str:
    """A relative path inside the repository (no `..`, no absolute path), without surrounding slashes."""
    value = (value or "").strip().strip("/")
    if value and (".." in Path(value).parts or value.startswith("~") or "\\" in value):
        raise ValidationFailed("The root directory must be a relative path inside the repository.",
                               details={"root_directory": ["Invalid path."]})
    return value


def _check_settings(values: dict) -> dict:
    if "framework" in values and values["framework"] not in FRAMEWORKS:
        raise ValidationFailed(f"Unknown framework `{values['framework']}`.",
                               details={"framework": [f"One of {', '.join(f for f in FRAMEWORKS if f)} or empty."]})
    if "root_directory" in values:
        values["root_directory"] = root_directory_check(values["root_directory"])
    return values


def _group(workspace, group_id):
    if not group_id:
        return None
    group = ProjectGroup.objects.filter(workspace=workspace, pk=group_id).first()
    if group is None:
        raise ValidationFailed("No such project group.", details={"group_id": ["Unknown group."]})
    return group


def _insert(*, workspace, actor, ip: str, source: str, name: str, slug: str | None, group_id=None,
            **fields) -> Project:
    settings_values = _check_settings({k: v for k, v in fields.items() if k in SETTINGS_FIELDS})
    slug = _slug_for(name, slug)
    try:
        with transaction.atomic():
            project = Project.objects.create(
                id=new_id("prj"), workspace=workspace, name=name, slug=slug, source=source,
                group=_group(workspace, group_id), **{k: v for k, v in fields.items() if k not in settings_values},
                **settings_values)
    except IntegrityError:
        raise Conflict("This project slug is taken.", code="slug_taken", details={"slug": ["Already in use."]})
    audit_record(workspace=workspace, actor=actor, action="project.created", target=project,
                 data={"name": name, "slug": slug, "source": source}, ip=ip)
    growth_event_record(event=FIRST_PROJECT, user=actor, workspace=workspace, properties={"source": source})
    return project


def _branch_of(info, requested: str | None) -> str:
    if requested:
        if info.branches and requested not in info.branches:
            raise ValidationFailed(f"The repository has no branch `{requested}`.",
                                   details={"production_branch": [f"Branches: {', '.join(info.branches[:20])}"]})
        return requested
    return info.default_branch or "main"


def project_create_from_git(*, workspace, actor, name: str, git_url: str = "", provider: str = "", repo: str = "",
                            slug: str | None = None, production_branch: str | None = None, group_id=None,
                            ip: str = "", **build_settings) -> Project:
    """A project built from a Git repository: an https URL (the outbound guard decides), or `provider` +
    `repo` via a connection. Never a path or `file://` URL on this server."""
    if provider or repo:
        if not (provider and repo):
            raise ValidationFailed("`provider` and `repo` go together.", details={"repo": ["Both are required."]})
        # Provider connections live in their own module; imported here so projects work without them.
        try:
            remote = git_remote_for_provider(workspace=workspace, provider=provider, repo=repo)
        except ImportError:
            raise ServiceUnavailable("Git provider connections are not available on this server.",
                                     code="provider_not_configured")
    elif git_url:
        git_url = git_url.strip()
        remote = git_remote_for_url(git_url)
    else:
        raise ValidationFailed("Give `gitUrl`, or `provider` and `repo`.", details={"git_url": ["Required."]})
    info = git_ls_remote(remote)
    branch = _branch_of(info, production_branch)
    # The network is behind us: the transaction (a write lock on SQLite) covers only the rows.
    with transaction.atomic():
        # A provider project stores provider + repo, never a URL that may carry a credential.
        return _insert(workspace=workspace, actor=actor, ip=ip, source=Project.Source.GIT, name=name, slug=slug,
                       group_id=group_id, git_url="" if provider else git_url, git_provider=provider,
                       git_repo=repo, production_branch=branch, **build_settings)


GIT_SETTINGS = ("git_url", "provider", "repo", "production_branch", "auto_deploy")


@transaction.atomic
def project_create_for_uploads(*, workspace, actor, name: str, slug: str | None = None, group_id=None, ip: str = "",
                               **build_settings) -> Project:
    """A project built from folders sent by the command-line client (`POST P/sources`), no repository: a Git
    setting given with it is refused."""
    for field in GIT_SETTINGS:
        if build_settings.pop(field, None):
            raise ValidationFailed(f"An upload project has no `{field}`.", details={field: ["Not allowed."]})
    return _insert(workspace=workspace, actor=actor, ip=ip, source=Project.Source.UPLOAD, name=name, slug=slug,
                   group_id=group_id, **build_settings)


@transaction.atomic
def project_create_from_image(*, workspace, actor, name: str, image_ref: str, slug: str | None = None,
                              group_id=None, ip: str = "", **build_settings) -> Project:
    """A project that runs a prebuilt container image."""
    image_ref = (image_ref or "").strip()
    if not IMAGE_REF.match(image_ref) or len(image_ref) > 300:
        raise ValidationFailed("Not an image reference (e.g. registry.example.com/team/app:1.2).",
                               details={"image_ref": ["Invalid image reference."]})
    build_settings.setdefault("framework", "docker")
    build_settings["auto_deploy"] = False
    return _insert(workspace=workspace, actor=actor, ip=ip, source=Project.Source.IMAGE, name=name, slug=slug,
                   group_id=group_id, image_ref=image_ref, **build_settings)


def project_create_from_template(*, workspace, actor, name: str, template: str, slug: str | None = None,
                                 group_id=None, ip: str = "") -> Project:
    """A project whose repository the platform hosts, seeded with a starter template."""
    starter = template_get(template)
    _slug_for(name, slug)  # fail before seeding a repository
    git_url = template_repo_create(workspace=workspace, template=template, name=slug or name)
    try:
        with transaction.atomic():
            return _insert(workspace=workspace, actor=actor, ip=ip, source=Project.Source.TEMPLATE, name=name,
                           slug=slug, group_id=group_id, git_url=git_url, template=template,
                           production_branch="main", framework=starter["framework"])
    except Exception:
        _remove_hosted_repo(git_url, workspace)
        raise


@transaction.atomic
def project_update(*, project: Project, actor, ip: str = "", **changes) -> Project:
    """Change a project's name, build settings, production branch, auto-deploy or group."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    values = _check_settings({k: v for k, v in changes.items() if k in SETTINGS_FIELDS})
    diff = {}
    if "group_id" in changes:
        group = _group(project.workspace, changes["group_id"])
        if project.group_id != (group.pk if group else None):
            diff["group_id"] = [project.group_id, group.pk if group else None]
            project.group = group
    for key, value in values.items():
        if key == "production_branch" and not value:
            raise ValidationFailed("The production branch cannot be empty.",
                                   details={"production_branch": ["Required."]})
        if getattr(project, key) != value:
            diff[key] = [getattr(project, key), value]
            setattr(project, key, value)
    if diff:
        project.save()
        audit_record(workspace=project.workspace, actor=actor, action="project.updated", target=project,
                     data={"changes": diff}, ip=ip)
    return project


def _remove_hosted_repo(git_url: str, workspace):
    path = hosted_repo_path(git_url, workspace=workspace)
    if path is not None and path.suffix == ".git":
        shutil.rmtree(path, ignore_errors=True)


@transaction.atomic
def project_delete(*, project: Project, actor, ip: str = "") -> Project:
    """Delete a project and everything it owns (deployments cascade; a hosted repository is removed)."""
    workspace, git_url, pk = project.workspace, project.git_url, project.pk
    audit_record(workspace=workspace, actor=actor, action="project.deleted", target=project,
                 data={"name": project.name, "slug": project.slug}, ip=ip)
    stored = _stored_files(project)
    project.delete()
    project.pk = pk
    transaction.on_commit(lambda: _remove_stored_files(stored))  # nothing is gone if the deletion rolls back
    if project.source == Project.Source.TEMPLATE:
        transaction.on_commit(lambda: _remove_hosted_repo(git_url, workspace))
    return project


def _stored_files(project: Project) -> list[str]:
    """What the project keeps in artifact storage: its uploaded folders and its deployments' built archives."""
    uploads = list(SourceUpload.objects.filter(project=project).values_list("storage_name", flat=True))
    built = Deployment.objects.filter(project=project).exclude(artifact_sha256="").values_list("pk", flat=True)
    return uploads + [artifact_name(pk) for pk in built]


def _remove_stored_files(names: list[str]) -> None:
    for name in names:
        source_delete(name)


def project_auto_deploy_status(*, project: Project) -> dict:
    """Which branches deploy on push and to which environment, or why pushes do not deploy."""
    base = {"auto_deploy": project.auto_deploy, "production_branch": project.production_branch,
            "source": project.source}
    if project.source == Project.Source.IMAGE:
        return base | {"enabled": False, "reason": "not_git_repository",
                       "message": "This project runs an image, not a Git repository: push a new image and deploy it.",
                       "rules": []}
    if not project.auto_deploy:
        return base | {"enabled": False, "reason": "auto_deploy_disabled",
                       "message": "Auto-deploy is off: pushes do not deploy. Turn it on in the project settings.",
                       "rules": []}
    rules = [{"branch": project.production_branch, "env": "production"},
             {"branch": "*", "env": "preview", "except": [project.production_branch]}]
    message = (f"Pushes to `{project.production_branch}` deploy to production; pushes to any other branch "
               f"create a preview deployment.")
    return base | {"enabled": True, "reason": None, "message": message, "rules": rules}
