"""Build jobs: what a builder is handed, and what it hands back.

A prepared build (builds.py) leaves a `pending` job. A builder node claims it (`build_job_claim`, a long poll):
the job gets its token (shown once, kept as a SHA-256) and the builder gets the job on the wire: commands,
the environment's variables resolved now, the limits (BUILD_*), its network (SANDBOX_EGRESS_ALLOWED_NETWORKS,
no endpoint yet) and what its output may weigh. With that token it fetches the source, appends log lines
(every call renews the build's lease and answers whether the deployment was canceled), uploads the output
(checked and unpacked here again: artifacts.py) and finishes. A pending job no builder takes within
BUILD_CLAIM_TIMEOUT_SECONDS ends `error`.

In the test suite (BUILD_INLINE) the build task runs the same builder code in its own process, with an
`InlineBuildLink` calling these functions directly.
"""
import secrets
import shutil
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, Unauthenticated
from config.long_poll import sleep_released, waiting_alone
from platform_app.models import AgentNode, BuildJob, Deployment
from platform_app.nodes.builder import Builder, BuildFailed, BuildLink
from platform_app.sandbox import Limits, Network, runner_get
from platform_app.sandbox.archive import Refused
from platform_app.services.deployments import artifacts
from platform_app.services.deployments.builds import deployment_finish_error, deployment_finish_ready
from platform_app.services.deployments.deployment_log import log_append, log_extend
from platform_app.services.deployments.deployments import deployment_lease_lost, deployment_lease_renew
from platform_app.services.identity.keys import sha256_hex

S, J = Deployment.Status, BuildJob.State
CLAIM_POLL_SECONDS = 0.25


def build_runner():
    """The sandbox builds run in, from the settings (SANDBOX_RUNNER, SANDBOX_ALLOW_NONE, ...)."""
    return runner_get(settings.SANDBOX_RUNNER, allow_none=settings.SANDBOX_ALLOW_NONE,
                      host_uid=settings.SANDBOX_HOST_UID, host_gid=settings.SANDBOX_HOST_GID,
                      readonly_paths=settings.SANDBOX_READONLY_PATHS, cgroup_parent=settings.SANDBOX_CGROUP_PARENT)


def build_limits() -> Limits:
    return Limits(memory_mb=settings.BUILD_MEMORY_MB, cpu_seconds=settings.BUILD_CPU_SECONDS,
                  processes=settings.BUILD_PROCESSES, disk_mb=settings.BUILD_DISK_MB)


def _wire(job: BuildJob, token: str) -> dict:
    """The job as a builder gets it (single-word keys: the camelCase renderer leaves them as they are)."""
    from platform_app.services.env.env import env_resolve
    from platform_app.services.resources.managed import managed_endpoints

    d = job.deployment
    spent = (timezone.now() - d.started_at).total_seconds() if d.started_at else 0
    network = Network(egress=True, allowed_networks=tuple(settings.SANDBOX_EGRESS_ALLOWED_NETWORKS),
                      dns_servers=tuple(settings.OUTBOUND_DNS_SERVERS),
                      endpoints=managed_endpoints(project=d.project))
    return {"id": d.pk, "token": token, "label": job.spec["label"], "root": job.spec["root"],
            "output": job.spec["output"], "runtime": job.spec["runtime"], "commands": job.spec["commands"],
            # pairs, not an object: keys are the user's, the camelCase renderer must not touch them
            "env": [[k, v] for k, v in env_resolve(project=d.project, environment=d.env, branch=d.branch).items()],
            "limits": build_limits().to_wire(), "egress": network.to_wire(),
            "time": max(1, int(settings.BUILD_TIMEOUT_SECONDS - spent)), "timeout": settings.BUILD_TIMEOUT_SECONDS,
            "artifact": {"bytes": settings.ARTIFACT_MAX_BYTES, "files": settings.ARTIFACT_MAX_FILES}}


def _claim_one(node: AgentNode | None, job_id: str | None = None) -> dict | None:
    jobs = BuildJob.objects.filter(state=J.PENDING, deployment__status=S.BUILDING)
    if job_id is not None:
        jobs = jobs.filter(pk=job_id)
    elif node.workspace_id:  # a workspace's own builder builds only that workspace's deployments
        jobs = jobs.filter(deployment__project__workspace_id=node.workspace_id)
    for job_pk in jobs.order_by("created_at").values_list("pk", flat=True)[:5]:
        token = "bld_" + secrets.token_urlsafe(32)
        # One claim wins: the update only matches while the job is still pending.
        won = BuildJob.objects.filter(pk=job_pk, state=J.PENDING).update(
            state=J.CLAIMED, node=node, claimed_at=timezone.now(), token_hash=sha256_hex(token))
        if won:
            job = BuildJob.objects.select_related("deployment__project").get(pk=job_pk)
            deployment_lease_renew(deployment_id=job_pk)
            if node is not None:
                log_append(job.deployment, f"Builder {node.name} took the build.", stream="system")
            return _wire(job, token)
    return None


def build_job_claim(*, node: AgentNode, wait: float) -> dict | None:
    """The oldest pending job this node may build, waiting up to `wait` seconds for one. A node's claims wait
    BUILD_CLAIM_WAITS_PER_NODE at a time; any other sent meanwhile looks once and answers."""
    if "build" not in node.runtimes:
        raise Conflict("This node did not join with the `build` capability.", code="not_a_builder")
    with waiting_alone(f"agents:claim-waits:{node.pk}", wait, slots=settings.BUILD_CLAIM_WAITS_PER_NODE) as allowed:
        return _claim_awaited(node=node, wait=allowed)


def _claim_awaited(*, node: AgentNode, wait: float) -> dict | None:
    deadline = time.monotonic() + wait
    while True:
        # a node that left meanwhile (its process stopped while this request waited) takes nothing more
        if not AgentNode.objects.filter(pk=node.pk, status=AgentNode.Status.ONLINE).update(
                last_heartbeat_at=timezone.now()):
            return None
        job = _claim_one(node)
        if job is not None or time.monotonic() >= deadline:
            return job
        sleep_released(CLAIM_POLL_SECONDS)


def build_job_authenticate(*, deployment_id: str, token: str) -> BuildJob:
    job = (BuildJob.objects.select_related("deployment__project")
           .filter(pk=deployment_id, token_hash=sha256_hex(token or "")).exclude(token_hash="").first())
    if job is None:
        raise Unauthenticated("Unknown build or wrong job token.", code="invalid_job_token")
    return job


def _running(job: BuildJob) -> bool:
    return (BuildJob.objects.filter(pk=job.pk, state=J.CLAIMED).exists()
            and Deployment.objects.filter(pk=job.pk, status=S.BUILDING).exists())


def build_job_log(*, job: BuildJob, lines: list[tuple[str, str]]) -> bool:
    """Append the builder's lines and renew the lease; True when the builder should stop (canceled, ended)."""
    if not BuildJob.objects.filter(pk=job.pk, state=J.CLAIMED).exists():
        return True
    log_extend(job.deployment, lines)
    if not Deployment.objects.filter(pk=job.pk, status=S.BUILDING).exists():
        return True
    deployment_lease_renew(deployment_id=job.pk)
    return False


def build_job_source(*, job: BuildJob):
    """The source archive (a file object), while the build runs. From now on the build is under way: a builder
    that goes silent fails it (before, the job goes back to the queue: `build_jobs_release`)."""
    if not _running(job):
        raise Conflict("The build is not running.")
    BuildJob.objects.filter(pk=job.pk).update(fetched_at=timezone.now())
    return artifacts.source_open(job.source)


def build_job_artifact(*, job: BuildJob, stream, length: int) -> None:
    """Check and keep the builder's output; a refused one ends the deployment `error` naming the path."""
    if not _running(job):
        raise Conflict("The build is not running.")
    try:
        digest, size = artifacts.artifact_store(deployment=job.deployment, stream=stream, length=length)
    except Refused as exc:
        message = f"The output was refused: {exc.path}: {exc.reason}." if exc.path else \
            f"The output was refused: {exc.reason}."
        build_job_finish(job=job, status="error", message=message, sandbox={})
        raise BuildFailed(message)
    Deployment.objects.filter(pk=job.pk).update(artifact_sha256=digest, artifact_bytes=size)


@transaction.atomic
def _done(job: BuildJob) -> bool:
    """Mark the job done, once; False when it already was."""
    return bool(BuildJob.objects.filter(pk=job.pk).exclude(state=J.DONE).update(state=J.DONE,
                                                                                 finished_at=timezone.now()))


def build_job_finish(*, job: BuildJob, status: str, message: str, sandbox: dict) -> str:
    """The builder's outcome: `ready` (with the output uploaded), `error` with its message, or `canceled`.
    Finishing twice changes nothing; the deployment's final status is returned."""
    if not _done(job):
        return Deployment.objects.get(pk=job.pk).status
    artifacts.source_delete(job.source)
    deployment = Deployment.objects.select_related("project").get(pk=job.pk)
    if status == "ready":
        if not deployment.artifact_sha256:
            return deployment_finish_error(deployment, "The builder finished without uploading the output.")
        from platform_app.services.env.env import env_snapshot

        spec = job.spec
        snapshot = {"commit": deployment.commit_sha, "framework": spec["framework"], "install": spec["install"],
                    "build": spec["build"], "output": spec["output"], "start": spec["start"], "sandbox": sandbox,
                    "env": env_snapshot(project=deployment.project, environment=deployment.env,
                                        branch=deployment.branch)}
        return deployment_finish_ready(deployment, framework=spec["framework"], snapshot=snapshot)
    if status == "canceled":
        return deployment.status
    _record_sandbox(deployment, sandbox)
    return deployment_finish_error(deployment, message or "The build failed.")


def _record_sandbox(deployment, sandbox: dict) -> None:
    if sandbox:
        Deployment.objects.filter(pk=deployment.pk).update(snapshot={**(deployment.snapshot or {}), "sandbox": sandbox})


def build_jobs_release() -> int:
    """Claimed jobs whose builder went silent before it fetched the source (stopped in the middle of a claim)
    go back to the queue for another builder; once fetched, the reaper ends them like any silent build."""
    released = 0
    for job in BuildJob.objects.filter(state=J.CLAIMED, fetched_at__isnull=True,
                                       deployment__status=S.BUILDING).select_related("deployment", "node"):
        unstarted = BuildJob.objects.filter(pk=job.pk, state=J.CLAIMED, fetched_at__isnull=True)
        if deployment_lease_lost(job.pk) and unstarted.update(state=J.PENDING, node=None, token_hash="",
                                                              claimed_at=None):
            log_append(job.deployment, f"Builder {getattr(job.node, 'name', '?')} went away before it started; "
                                       "the build waits for another.", stream="system")
            released += 1
    return released


def build_jobs_expire() -> int:
    """Pending jobs no builder took within BUILD_CLAIM_TIMEOUT_SECONDS end their deployment `error`."""
    cutoff = timezone.now() - timedelta(seconds=settings.BUILD_CLAIM_TIMEOUT_SECONDS)
    ended = 0
    for job in BuildJob.objects.filter(state=J.PENDING, created_at__lt=cutoff).select_related("deployment"):
        if _done(job):
            artifacts.source_delete(job.source)
            message = f"No builder took this build within {settings.BUILD_CLAIM_TIMEOUT_SECONDS}s; is one running?"
            ended += deployment_finish_error(job.deployment, message) == S.ERROR
    return ended


# -- in process (BUILD_INLINE) ------------------------------------------------------------------------------
class InlineBuildLink(BuildLink):
    """The builder's link to the platform when both run in one process: the same functions the routes call."""

    def __init__(self, job: BuildJob):
        self.job = job

    def fetch_source(self, job: dict, dest: Path) -> None:
        with build_job_source(job=self.job) as stream, open(dest, "wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)

    def log(self, job: dict, lines) -> bool:
        return build_job_log(job=self.job, lines=lines)

    def upload(self, job: dict, archive: Path) -> None:
        with open(archive, "rb") as stream:
            build_job_artifact(job=self.job, stream=stream, length=archive.stat().st_size)
        self.job.deployment.refresh_from_db()

    def finish(self, job: dict, status: str, message: str, sandbox: dict) -> None:
        build_job_finish(job=self.job, status=status, message=message, sandbox=sandbox)


def build_job_run_inline(*, job: BuildJob) -> str:
    """Claim `job` for this process and run it here (BUILD_INLINE); the deployment's final status."""
    wire = _claim_one(None, job_id=job.pk)
    if wire is None:
        return Deployment.objects.get(pk=job.pk).status
    job.refresh_from_db()
    try:
        runner = build_runner()
    except Exception as exc:  # noqa: BLE001 - no sandbox where one is required: the build says why
        build_job_finish(job=job, status="error", message=str(exc), sandbox={})
    else:
        Builder(runner, work_root=settings.BUILD_ROOT).run_job(wire, InlineBuildLink(job))
    return Deployment.objects.get(pk=job.pk).status
