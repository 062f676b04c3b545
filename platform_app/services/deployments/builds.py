"""The build, on the platform's side: take the deployment, fetch its source through the outbound guard, detect the
framework, scan for committed secrets, archive the source, and hand a job to a builder (build_jobs.py).

The install and build commands never run here: a builder runs them in its sandbox (platform_app/nodes/builder.py)
and reports back through build_jobs, which ends the deployment with `deployment_finish_ready` or
`deployment_finish_error` (images.py ends an image deployment with them too). Every
line is logged, every state change an event."""
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ApplicationError
from platform_app.models import BuildJob, Component, Deployment, Project
from platform_app.sandbox.files import remove_tree
from platform_app.services.deployments import artifacts
from platform_app.services.deployments.deployment_log import event_record, log_append
from platform_app.services.edge.hostcache import edge_hosts_invalidate
from platform_app.services.org.growth_events import FIRST_DEPLOYMENT_READY, growth_event_record

S = Deployment.Status


class BuildFailed(Exception):
    pass


def _claim(deployment_id: str) -> Deployment | None:
    """queued → building, once: a second delivery of the task finds it taken and does nothing."""
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().select_related("project").filter(pk=deployment_id).first()
        if deployment is None or deployment.status != S.QUEUED:
            return None
        deployment.status, deployment.started_at = S.BUILDING, timezone.now()
        deployment.save(update_fields=["status", "started_at"])
    event_record(deployment, "building")
    return deployment


def deployment_build(*, deployment_id: str) -> BuildJob | None:
    """Prepare the build of a queued deployment and leave its job for a builder; None when there is nothing to
    build (taken already, or it ended `error` here: an unreadable repository, a missing root directory)."""
    from platform_app.services.projects.detection import detect

    deployment = _claim(deployment_id)
    if deployment is None:
        return None
    project: Project = deployment.project
    settings.BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{deployment.pk}-", dir=settings.BUILD_ROOT))
    try:
        if deployment.source_upload_id:
            sha = _unpack_upload(deployment, scratch / "src")
        else:
            sha = _clone(deployment, project, scratch / "src")
            Deployment.objects.filter(pk=deployment.pk).update(commit_sha=sha)
            deployment.commit_sha = sha
        src = (scratch / "src").resolve()
        root = (src / project.root_directory).resolve()
        if not root.is_relative_to(src) or not root.is_dir():
            raise BuildFailed(f"The root directory {project.root_directory!r} does not exist in the repository.")
        detection = detect(root)
        component = deployment.component
        install = project.install_command or detection.install_command
        build = (component and component.build_command) or project.build_command or detection.build_command
        output = project.output_directory or detection.output_directory or "."
        start = component.start_command if component else project.start_command or detection.start_command
        log_append(deployment, f"Detected {detection.framework} ({', '.join(detection.evidence) or 'no evidence'})",
                   stream="system")
        _scan(project, deployment, src, sha)
        spec = {"root": root.relative_to(src).as_posix(), "output": output, "runtime": detection.runtime,
                "commands": [c for c in (install, build) if c], "label": project.slug,
                "framework": detection.framework, "start": start, "install": install, "build": build}
        job = _hand_over(deployment, spec, src, scratch / "source.tar.gz")
    except BuildFailed as exc:
        deployment_finish_error(deployment, str(exc))
        return None
    finally:
        remove_tree(scratch)
    return job


def _clone(deployment, project, dest: Path) -> str:
    from platform_app.services.providers.git_cli import git_clone, git_ls_remote
    from platform_app.services.providers.git_urls import git_remote_for_project

    try:
        # Checked again at every build: a hosted path must stay inside the workspace's folder, and a
        # remote name may resolve elsewhere than when the project was created.
        remote = git_remote_for_project(project)
        log_append(deployment, f"Cloning {remote.label} at {deployment.branch}", stream="system")
        if deployment.branch not in git_ls_remote(remote).branches:
            raise BuildFailed(f"git clone failed: the repository has no branch `{deployment.branch}`.")
        return git_clone(remote, branch=deployment.branch, dest=dest, timeout=settings.BUILD_TIMEOUT_SECONDS)
    except ApplicationError as exc:
        raise BuildFailed(f"git clone failed: {exc.message}")


def _unpack_upload(deployment, dest: Path) -> str:
    """An upload project's folder, as a clone would leave it; its SHA-256 stands for the commit in the scan."""
    from platform_app.services.deployments.uploads import source_upload_fetch

    upload = deployment.source_upload
    who = upload.uploaded_by.email if upload.uploaded_by_id else "someone"
    log_append(deployment, f"Unpacking the folder uploaded by {who} ({upload.files} files, {upload.size} bytes, "
                           f"sha256 {upload.sha256[:12]})", stream="system")
    try:
        source_upload_fetch(upload, dest)
    except ApplicationError as exc:
        raise BuildFailed(f"The upload could not be unpacked: {exc.message}")
    return upload.sha256[:40]


def _hand_over(deployment, spec: dict, src: Path, archive: Path) -> BuildJob:
    """Keep the source in artifact storage for the builder that claims the job (build_jobs.py)."""
    from platform_app.services.providers.git_cli import git_archive

    try:
        if deployment.source_upload_id:  # checked already: its own archive, copied (the build's copy goes with it)
            name = artifacts.source_copy(deployment_id=deployment.pk, name=deployment.source_upload.storage_name)
        else:
            git_archive(src, archive)
            name = artifacts.source_store(deployment_id=deployment.pk, path=archive)
    except ApplicationError as exc:
        raise BuildFailed(f"The source could not be archived: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - any storage backend's failure: the build ends saying so
        raise BuildFailed(f"The source could not be stored ({type(exc).__name__}); try again.")
    if not settings.BUILD_INLINE:
        log_append(deployment, "Waiting for a builder.", stream="system")
    return BuildJob.objects.create(deployment=deployment, spec=spec, source=name)


def _scan(project, deployment, repo_dir, sha):
    from platform_app.services.env.secret_scan import secret_scan_run

    found = secret_scan_run(project=project, deployment=deployment, repo_dir=repo_dir, commit_sha=sha)
    if found:
        log_append(deployment, f"Warning: {found} committed secret(s) found; see secret findings.", stream="system")


@transaction.atomic
def deployment_finish_ready(deployment, *, framework: str, snapshot: dict) -> str:
    """A building deployment is ready: production (or its component) serves it (and its workspace's nodes hear
    of it at once: agents.py listens). A deployment canceled or ended meanwhile keeps that outcome."""
    row = Deployment.objects.select_for_update().get(pk=deployment.pk)
    if row.status != S.BUILDING:  # canceled, or ended by the reaper meanwhile: that outcome stands
        remove_tree(Path(settings.ARTIFACT_ROOT) / row.pk)
        return row.status
    now = timezone.now()
    row.status, row.ready_at, row.finished_at = S.READY, now, now
    row.artifact_path, row.framework, row.snapshot = row.pk, framework, snapshot
    row.save()
    if row.component_id:  # a component's deploy: it rolls the component out, production stays as it is
        Component.objects.filter(pk=row.component_id).update(deployment=row)
        edge_hosts_invalidate(project_id=row.project_id)
    elif row.env == "production":
        Project.objects.filter(pk=row.project_id).update(production_deployment=row)
    event_record(row, "ready")
    log_append(row, "Deployment ready.", stream="system")
    workspace_id = Project.objects.filter(pk=row.project_id).values_list("workspace_id", flat=True).first()
    growth_event_record(event=FIRST_DEPLOYMENT_READY, user=row.created_by_id, workspace=workspace_id)
    return S.READY


def deployment_finish_error(deployment, message: str) -> str:
    """A building deployment failed with `message` (in its log and on it), unless it ended otherwise meanwhile."""
    log_append(deployment, f"Error: {message}", stream="system")
    with transaction.atomic():
        row = Deployment.objects.select_for_update().get(pk=deployment.pk)
        if row.status != S.BUILDING:
            return row.status
        row.status, row.error_message, row.finished_at = S.ERROR, message[:2000], timezone.now()
        row.save(update_fields=["status", "error_message", "finished_at"])
    event_record(row, "error", message)
    return S.ERROR
