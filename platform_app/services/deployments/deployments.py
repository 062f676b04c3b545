"""Deployments: trigger, cancel, events, logs, URLs. The build itself is in services/builds.py."""
import functools
import logging
import threading
import time
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from config.jobs import enqueue, publish
from config.rows import columns, select_one, table
from platform_app.models import Deployment, Project
from platform_app.services.billing.caps import usage_cap_enforce
from platform_app.services.teams.audit import audit_record
from platform_app.services.edge.hostcache import edge_hosts_invalidate
# Log lines are written and read through deployment_log; these names stay importable from here too.
from platform_app.services.deployments.deployment_log import event_record, log_append, log_channel  # noqa: F401

S = Deployment.Status
BUILD_TASK = "platform_app.tasks.deployments.deployment_build"  # enqueued by name: tasks import services
logger = logging.getLogger(__name__)


IDEMPOTENCY_KEY_MAX = 64  # a UUID has 36; the column keeps room for a scope such as a hook's `hook:<id>:`


def deployment_trigger(*, project, env: str, branch: str | None, trigger: str, actor=None, ip: str = "",
                       idempotency_key: str | None = None, idempotency_scope: str = "", component=None,
                       source_id: str | None = None) -> Deployment:
    """Record a queued deployment and enqueue its build once the transaction commits. A retried call with the
    same Idempotency-Key (within `idempotency_scope`) returns the first deployment (`_replayed` set) instead of
    building twice. A `component`'s deployment becomes that component's when ready (not the project's
    production). Refused with 402 `usage_cap_reached` once the workspace's spend reached its usage cap."""
    if idempotency_key and len(idempotency_key) > IDEMPOTENCY_KEY_MAX:
        raise ValidationFailed(f"`Idempotency-Key` must be at most {IDEMPOTENCY_KEY_MAX} characters.",
                               details={"Idempotency-Key": [f"At most {IDEMPOTENCY_KEY_MAX} characters."]})
    idempotency_key = f"{idempotency_scope}{idempotency_key}" if idempotency_key else None
    if idempotency_key:
        existing = Deployment.objects.filter(project=project, idempotency_key=idempotency_key).first()
        if existing is not None:
            existing._replayed = True
            return existing
    try:
        return _trigger(project=project, env=env, branch=branch, trigger=trigger, actor=actor, ip=ip,
                        idempotency_key=idempotency_key, component=component, source_id=source_id)
    except IntegrityError:  # a concurrent retry with the same key committed first
        existing = Deployment.objects.get(project=project, idempotency_key=idempotency_key)
        existing._replayed = True
        return existing


def environment_require(*, project, env: str) -> None:
    """400 `unknown_environment` unless `env` is one of the project's environments: every kind of deployment."""
    from platform_app.services.env.env import environment_names

    if env not in environment_names(project):
        raise ValidationFailed(f"Unknown environment {env}.", code="unknown_environment", details={"env": ["Unknown."]})


@transaction.atomic
def _trigger(*, project, env, branch, trigger, actor, ip, idempotency_key, component=None,
             source_id=None) -> Deployment:
    environment_require(project=project, env=env)
    if trigger not in Deployment.Trigger.values:
        raise ValidationFailed("trigger must be manual, api, hook or git.", details={"trigger": ["Invalid."]})
    upload = _upload_for(project, source_id)
    if upload is None and (project.source == project.Source.IMAGE or not (project.git_url or project.git_provider)):
        raise ValidationFailed("This project has no Git repository to build.", code="not_buildable")
    usage_cap_enforce(workspace=project.workspace)  # 402 once this period's spend reached the workspace's cap
    branch = "" if upload is not None else branch or project.production_branch
    deployment = Deployment.objects.create(project=project, env=env, branch=branch, source_upload=upload,
                                           trigger=trigger, created_by=actor if getattr(actor, "pk", None) else None,
                                           idempotency_key=idempotency_key or None, component=component)
    what = f"component {component.name}" if component is not None else env
    built = f"the upload {upload.sha256[:12]}" if upload is not None else deployment.branch
    event_record(deployment, "queued", f"{trigger} deployment of {built} to {what}")
    audit_record(workspace=project.workspace, actor=actor, action="deployment.created", target=deployment,
                 data={"env": env, "branch": deployment.branch, "trigger": trigger}, ip=ip)

    enqueue(BUILD_TASK, deployment.pk)  # on commit; a broker outage leaves it to deployments_requeue_stale
    return deployment


def _upload_for(project, source_id):
    """What an upload project builds: the upload named, or (a hook, a redeploy) its latest. None for the others;
    naming an upload for a Git project is 400."""
    from platform_app.models import SourceUpload

    if source_id:
        if project.source != project.Source.UPLOAD:
            raise ValidationFailed("Only a project made for uploads (source: upload) builds an upload.",
                                   code="not_an_upload_project", details={"source": ["Not an upload project."]})
        upload = SourceUpload.objects.select_related("uploaded_by").filter(project=project, pk=source_id).first()
        if upload is None:
            raise ValidationFailed("No such upload in this project.", code="unknown_source",
                                   details={"source": ["Unknown."]})
        return upload
    if project.source != project.Source.UPLOAD:
        return None
    latest = project.source_uploads.select_related("uploaded_by").first()
    if latest is None:
        raise ValidationFailed("Nothing was uploaded to this project yet: `svc deploy` sends a folder.",
                               code="no_source", details={"source": ["Required."]})
    return latest


@functools.cache
def _deployment_get_sql(vendor: str) -> str:
    q = connection.ops.quote_name
    return (f"SELECT {columns(Deployment, 'd')}, {columns(Project, 'p')} FROM {table(Deployment)} d "
            f"JOIN {table(Project)} p ON p.{q('id')} = d.{q('project_id')} "
            f"WHERE d.{q('id')} = %s AND p.{q('workspace_id')} = %s")


def deployment_get(*, workspace, deployment_id: str) -> Deployment:
    """The workspace's deployment, with its project; written by hand (config/rows.py): a deployment's answer, its
    events and its log all start here, and compiling the ORM's statement was a third of a deployment's answer."""
    row = select_one(_deployment_get_sql(connection.vendor), [deployment_id, workspace.pk], Deployment, Project)
    if row is None:
        raise NotFound("No such deployment.")
    deployment, deployment.project = row
    return deployment


@transaction.atomic
def deployment_cancel(*, workspace, deployment_id: str, actor=None) -> Deployment:
    """A queued build is canceled at once; a running one is marked and its process group killed by the
    build loop within a second; a finished one is 409."""
    deployment = Deployment.objects.select_for_update().filter(pk=deployment_id, project__workspace=workspace).first()
    if deployment is None:
        raise NotFound("No such deployment.")
    if deployment.is_finished:
        raise Conflict(f"The deployment already ended ({deployment.status}).")
    deployment.status = S.CANCELED
    deployment.finished_at = timezone.now()
    deployment.save(update_fields=["status", "finished_at"])
    event_record(deployment, "canceled", f"canceled by {getattr(actor, 'email', 'the platform')}")
    return deployment


def queue_position(deployment) -> int | None:
    from platform_app.services.deployments.listings import queue_positions

    return queue_positions(deployments=[deployment])[deployment.pk]


def _lease_key(deployment_id: str) -> str:
    return f"build-lease:{deployment_id}"


def deployment_lease_renew(*, deployment_id: str) -> None:
    """The build's heartbeat, renewed by the process running it. The lease is in the cache (Redis in production,
    shared by every worker); losing a renewal to a cache outage only delays it."""
    try:
        cache.set(_lease_key(deployment_id), time.time(),
                  timeout=settings.BUILD_TIMEOUT_SECONDS + 4 * settings.BUILD_LEASE_SECONDS)
    except Exception as exc:  # noqa: BLE001 - the reaper does not judge leases it cannot read either
        logger.warning("Could not renew the build lease of %s: %s", deployment_id, exc)


@contextmanager
def deployment_lease(*, deployment_id: str):
    """Keep renewing the lease from a background thread while the block runs: a worker killed mid-build stops
    renewing, whatever step the build was in."""
    stop = threading.Event()
    interval = max(0.2, settings.BUILD_LEASE_SECONDS / 5)

    def renew():
        while not stop.wait(interval):
            deployment_lease_renew(deployment_id=deployment_id)

    deployment_lease_renew(deployment_id=deployment_id)
    thread = threading.Thread(target=renew, name=f"lease-{deployment_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def deployment_lease_lost(deployment_id: str) -> bool:
    """True when the build's lease is older than BUILD_LEASE_SECONDS. A lease the cache does not hold (the cache
    was emptied, or the worker died before its first renewal) is started now, so it is judged one lease later."""
    now = time.time()
    try:
        if cache.add(_lease_key(deployment_id), now, timeout=settings.BUILD_TIMEOUT_SECONDS):
            return False
        renewed = cache.get(_lease_key(deployment_id))
    except Exception:  # noqa: BLE001 - cache down: only the fixed age below can end a build
        return False
    return renewed is not None and now - float(renewed) > settings.BUILD_LEASE_SECONDS


def _reap(deployment, message: str, event: str) -> bool:
    ended = Deployment.objects.filter(pk=deployment.pk, status=deployment.status).update(
        status=S.ERROR, finished_at=timezone.now(), error_message=message)
    if ended:
        event_record(deployment, "error", event)
    return bool(ended)


def deployments_reap_stuck() -> int:
    """A build whose worker died (its lease went stale) or that ran past BUILD_STUCK_AFTER_SECONDS ends in
    error instead of building forever. Only a row still in the state it was read in is ended."""
    from platform_app.models import BuildJob

    cutoff = timezone.now() - timedelta(seconds=settings.BUILD_STUCK_AFTER_SECONDS)
    running = Deployment.objects.filter(status__in=[S.BUILDING, S.DEPLOYING]).only("pk", "status", "started_at")
    # A job waiting for a builder holds no lease: BUILD_CLAIM_TIMEOUT_SECONDS ends it (build_jobs_expire); one
    # claimed but not started goes back to waiting (build_jobs_release).
    waiting = set(BuildJob.objects.filter(state=BuildJob.State.PENDING).values_list("pk", flat=True))
    reaped = 0
    for deployment in running:
        if deployment.started_at and deployment.started_at < cutoff:
            reaped += _reap(deployment, "The build stopped reporting and was ended.",
                            "reaped: no progress past the build limit")
        elif deployment.status == S.BUILDING and deployment.pk not in waiting and deployment_lease_lost(deployment.pk):
            reaped += _reap(deployment, "The builder running the build stopped (no heartbeat); trigger it again.",
                            f"reaped: no heartbeat for {settings.BUILD_LEASE_SECONDS:g}s")
    return reaped


def deployments_requeue_stale() -> int:
    """Enqueue again the builds of deployments still queued BUILD_REQUEUE_AFTER_SECONDS after they were
    triggered: their job may never have reached the broker. A second delivery is harmless (only a queued
    deployment is claimed); the cache keeps it to one publish per deployment per period."""
    period = settings.BUILD_REQUEUE_AFTER_SECONDS
    cutoff = timezone.now() - timedelta(seconds=period)
    stale = Deployment.objects.filter(status=S.QUEUED, created_at__lt=cutoff).order_by("created_at")
    sent = 0
    for pk in stale.values_list("pk", flat=True)[:500]:
        try:
            if not cache.add(f"build-requeued:{pk}", 1, timeout=period):
                continue
        except Exception:  # noqa: BLE001 - without the cache a duplicate publish is the lesser harm
            pass
        sent += publish(BUILD_TASK, (pk,))
    return sent


@transaction.atomic
def deployment_rollback(*, project, deployment_id: str | None, actor=None, ip: str = "") -> Deployment:
    """Point production at an earlier ready production deployment of the project, without rebuilding: the named
    one, else the newest that was ready before the one serving now."""
    from platform_app.models import Project
    from platform_app.services.deployments.selectors import PRODUCTION_ENV, rollback_targets

    project = Project.objects.select_for_update().get(pk=project.pk)
    candidates = rollback_targets(project=project)
    if deployment_id:
        target = candidates.filter(pk=deployment_id).first()
        named = target or Deployment.objects.filter(pk=deployment_id, project=project).first()
        if named is None:
            raise NotFound("No such deployment in this project.")
        if named.env != PRODUCTION_ENV or named.component_id:
            where = "a component's deploy" if named.component_id else f"the {named.env} environment"
            message = (f"Deployment {named.pk} belongs to {where}; production can only be rolled back to a "
                       f"deployment of the production environment.")
            raise ValidationFailed(message, details={"deploymentId": [message]})
        if target is None:
            raise Conflict("Only another ready deployment of this project can be rolled back to.")
    else:
        current = project.production_deployment
        if current is not None and current.ready_at is not None:
            candidates = candidates.filter(ready_at__lt=current.ready_at)
        target = candidates.order_by("-ready_at", "-created_at").first()
        if target is None:
            raise Conflict("There is no earlier ready production deployment to roll back to.",
                           code="nothing_to_roll_back")
    previous = project.production_deployment_id
    project.production_deployment = target
    project.save(update_fields=["production_deployment"])
    edge_hosts_invalidate(project_id=project.pk)  # every web process serves the new deployment within a second
    event_record(target, "promoted", f"rolled back production from {previous or 'nothing'}")
    audit_record(workspace=project.workspace, actor=actor, action="deployment.rolled_back", target=target,
                 data={"from": previous, "to": target.pk, "commit": target.commit_sha}, ip=ip)
    return target


def needs_redeploy(deployment) -> bool:
    """A ready deployment whose environment variables changed since it was built."""
    from platform_app.services.deployments.listings import redeploy_flags

    return redeploy_flags(deployments=[deployment])[deployment.pk]

