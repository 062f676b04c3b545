"""The build: clone at the branch, detect, inject env vars, install and build in a process group with a
time limit, store the output folder as the artifact. Every line is logged, every state change an event."""
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ApplicationError
from platform_app.models import Deployment, Project
from platform_app.services.deployments.deployment_log import event_record, log_append

S = Deployment.Status


class BuildFailed(Exception):
    pass


class BuildCanceled(Exception):
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


def _clean_env(extra: dict) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8", "CI": "1",
           "HOME": tempfile.gettempdir()}
    env.update(extra)
    return env


def _canceled(deployment) -> bool:
    return Deployment.objects.filter(pk=deployment.pk, status=S.CANCELED).exists()


def run_step(deployment, command: str, *, cwd: Path, env: dict, deadline: float) -> None:
    """Run one shell command in its own process group, streaming its output into the log. A timeout or a
    cancel kills the whole group, so nothing is left running."""
    log_append(deployment, f"$ {command}", stream="system")
    proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    buffer, tail = b"", []
    try:
        while True:
            if time.monotonic() > deadline:
                raise BuildFailed(f"The build exceeded its time limit of {settings.BUILD_TIMEOUT_SECONDS}s.")
            if _canceled(deployment):
                raise BuildCanceled()
            if selector.select(timeout=0.5):
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", errors="replace").rstrip("\r")
                    log_append(deployment, text)
                    tail = (tail + [text])[-5:]
        if buffer:
            log_append(deployment, buffer.decode("utf-8", errors="replace"))
        code = proc.wait(timeout=max(1, deadline - time.monotonic()))
    except (BuildFailed, BuildCanceled, subprocess.TimeoutExpired):
        _kill(proc)
        raise
    finally:
        selector.close()
    if code != 0:
        raise BuildFailed(f"`{command}` exited with {code}: " + " | ".join(tail)[-500:])


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def deployment_build(*, deployment_id: str) -> str:
    """The whole pipeline; returns the final status. Idempotent: only a queued deployment is built."""
    from platform_app.services.projects.detection import detect
    from platform_app.services.env.env import env_resolve, env_snapshot
    from platform_app.services.providers.git_cli import git_clone, git_ls_remote
    from platform_app.services.providers.git_urls import git_remote_for_project

    deployment = _claim(deployment_id)
    if deployment is None:
        return "skipped"
    project: Project = deployment.project
    settings.BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{deployment.pk}-", dir=settings.BUILD_ROOT))
    deadline = time.monotonic() + settings.BUILD_TIMEOUT_SECONDS
    try:
        try:
            # Checked again at every build: a hosted path must stay inside the workspace's folder, and a
            # remote name may resolve elsewhere than when the project was created.
            remote = git_remote_for_project(project)
            log_append(deployment, f"Cloning {remote.label} at {deployment.branch}", stream="system")
            if deployment.branch not in git_ls_remote(remote).branches:
                raise BuildFailed(f"git clone failed: the repository has no branch `{deployment.branch}`.")
            sha = git_clone(remote, branch=deployment.branch, dest=scratch / "src",
                            timeout=settings.BUILD_TIMEOUT_SECONDS)
        except ApplicationError as exc:
            raise BuildFailed(f"git clone failed: {exc.message}")
        Deployment.objects.filter(pk=deployment.pk).update(commit_sha=sha)
        deployment.commit_sha = sha
        root = (scratch / "src" / project.root_directory).resolve()
        if not str(root).startswith(str(scratch)) or not root.is_dir():
            raise BuildFailed(f"The root directory {project.root_directory!r} does not exist in the repository.")
        detection = detect(root)
        install = project.install_command or detection.install_command
        build = project.build_command or detection.build_command
        output = project.output_directory or detection.output_directory or "."
        log_append(deployment, f"Detected {detection.framework} ({', '.join(detection.evidence) or 'no evidence'})",
                   stream="system")
        variables = env_resolve(project=project, environment=deployment.env, branch=deployment.branch)
        _scan(project, deployment, scratch / "src", sha)
        env = _clean_env(variables)
        for command in (install, build):
            if command:
                run_step(deployment, command, cwd=root, env=env, deadline=deadline)
        out_dir = (root / output).resolve()
        if not out_dir.is_dir() or not str(out_dir).startswith(str(root)):
            raise BuildFailed(f"The output directory {output!r} was not produced by the build.")
        artifact = settings.ARTIFACT_ROOT / deployment.pk
        shutil.rmtree(artifact, ignore_errors=True)
        shutil.copytree(out_dir, artifact, ignore=shutil.ignore_patterns(".git"))
        snapshot = {"commit": sha, "framework": detection.framework, "install": install, "build": build,
                    "output": output, "start": project.start_command or detection.start_command,
                    "env": env_snapshot(project=project, environment=deployment.env, branch=deployment.branch)}
        return _finish_ready(deployment, artifact, detection.framework, snapshot)
    except BuildCanceled:
        log_append(deployment, "Build canceled.", stream="system")
        return S.CANCELED
    except BuildFailed as exc:
        return _finish_error(deployment, str(exc))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _scan(project, deployment, repo_dir, sha):
    from platform_app.services.env.secret_scan import secret_scan_run

    found = secret_scan_run(project=project, deployment=deployment, repo_dir=repo_dir, commit_sha=sha)
    if found:
        log_append(deployment, f"Warning: {found} committed secret(s) found; see secret findings.", stream="system")


@transaction.atomic
def _finish_ready(deployment, artifact: Path, framework: str, snapshot: dict) -> str:
    row = Deployment.objects.select_for_update().get(pk=deployment.pk)
    if row.status != S.BUILDING:  # canceled, or ended by the reaper meanwhile: that outcome stands
        shutil.rmtree(artifact, ignore_errors=True)
        return row.status
    now = timezone.now()
    row.status, row.ready_at, row.finished_at = S.READY, now, now
    row.artifact_path, row.framework, row.snapshot = str(artifact.relative_to(settings.ARTIFACT_ROOT)), framework, snapshot
    row.save()
    if row.env == "production":
        Project.objects.filter(pk=row.project_id).update(production_deployment=row)
    event_record(row, "ready")
    log_append(row, "Deployment ready.", stream="system")
    return S.READY


def _finish_error(deployment, message: str) -> str:
    log_append(deployment, f"Error: {message}", stream="system")
    with transaction.atomic():
        row = Deployment.objects.select_for_update().get(pk=deployment.pk)
        if row.status != S.BUILDING:
            return row.status
        row.status, row.error_message, row.finished_at = S.ERROR, message[:2000], timezone.now()
        row.save(update_fields=["status", "error_message", "finished_at"])
    event_record(row, "error", message)
    return S.ERROR
