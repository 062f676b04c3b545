"""Node agents: invite, join, heartbeat (reports in, assignments out), leave, expiry; and the placement of
runtime deployments (those with a start command) onto online nodes."""
import logging
import random
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, PositiveBigIntegerField, Q, Value
from django.db.models.functions import Coalesce, Greatest
from django.db.models.signals import post_save
from django.utils import timezone

from config.errors import NotFound, Unauthenticated, ValidationFailed
from config.long_poll import sleep_released, waiting_alone
from config.outbound import OutboundRefused, outbound_host_check
from platform_app.models import AgentInvite, AgentNode, Component, Deployment, Instance, Project, RuntimeLogLine, Volume
from platform_app.models.deployments import RUNS_ON_NODES
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.resources.components import plan_instances

logger = logging.getLogger(__name__)

LIVE = ("assigned", "starting", "running")
REPORTED = ("starting", "running", "crashed")  # what a node may say of an instance
MAX_LOG_LINES = 500  # kept of one heartbeat
MAX_LOG_LINE_CHARS = 5000  # the agent cuts longer lines (platform_app/nodes/agent.py)
HEARTBEAT_POLL_SECONDS = 0.25  # how often a waiting heartbeat looks for news (as a build claim does)


def is_runtime(deployment) -> bool:
    """Run by nodes (a start command, or an image), rather than served from its files by the edge."""
    snapshot = deployment.snapshot or {}
    return bool(snapshot.get("start") or snapshot.get("imageDigest"))


@transaction.atomic
def agent_invite_create(*, workspace, actor=None, by_operator: bool = False) -> tuple[AgentInvite, str]:
    """A single-use join token for a node of `workspace`, or of the platform (a builder for every workspace)
    when `workspace` is None (staff only: `manage.py node_invite`). `by_operator`: made on the server by its
    operator (management commands), whose node may sit on an internal address; a platform invite always is."""
    token = "agj_" + secrets.token_urlsafe(32)
    invite = AgentInvite.objects.create(workspace=workspace, token_hash=sha256_hex(token),
                                        created_by=actor if getattr(actor, "pk", None) else None,
                                        by_operator=by_operator or workspace is None,
                                        expires_at=timezone.now() + timedelta(seconds=settings.AGENT_INVITE_TTL_SECONDS))
    return invite, token


def agent_join_command(token: str) -> str:
    """What to run on the new machine: the node needs none of the platform's settings or secrets."""
    return f"python -m platform_app.nodes --server {settings.SITE_URL.rstrip('/')} --join {token}"


@transaction.atomic
def agent_join(*, token: str, name: str, runtimes: list[str], capacity: int, host: str,
               sandbox: dict | None = None) -> tuple[AgentNode, str]:
    """Spend a single-use invite; returns the node and its own secret token. `sandbox` is what the node says its
    sandbox enforces (shown on the nodes page)."""
    invite = AgentInvite.objects.select_for_update().filter(token_hash=sha256_hex(token or "")).first()
    if invite is None or invite.used_at is not None or invite.expires_at <= timezone.now():
        raise Unauthenticated("The join token is unknown, used or expired.", code="invalid_join_token")
    host = host or "127.0.0.1"
    if not invite.by_operator:
        node_host_check(host)
    invite.used_at = timezone.now()
    invite.save(update_fields=["used_at"])
    node_token = "agn_" + secrets.token_urlsafe(32)
    node = AgentNode.objects.create(workspace=invite.workspace, name=name, token_hash=sha256_hex(node_token),
                                    runtimes=runtimes, capacity=capacity, host=host,
                                    by_operator=invite.by_operator, sandbox=sandbox or {})
    return node, node_token


def node_host_check(host: str) -> None:
    """A workspace node's address is where the edge will send visitors' requests: the outbound guard must allow
    it (400 naming `host` otherwise), as it allows it again at every request (platform_app/edge.py)."""
    try:
        outbound_host_check(host, purpose="node host")
    except OutboundRefused as exc:
        raise ValidationFailed(exc.message, code=exc.code, details={"host": [exc.message]})


def agent_authenticate(*, node_id: str, token: str) -> AgentNode:
    node = AgentNode.objects.filter(pk=node_id, token_hash=sha256_hex(token or "")).first()
    if node is None or node.status == AgentNode.Status.LEFT:
        raise Unauthenticated("Unknown node or wrong node token.", code="invalid_node_token")
    return node


@dataclass
class Slot:
    """What placement keeps running: `count` instances of `deployment` (for `component`, when it is one's)."""

    deployment: Deployment
    component: Component | None = None
    count: int = 1


def _wanted(workspace) -> list[Slot]:
    """Each project's production deployment and the newest ready deployment of every other (environment,
    branch), one instance each, when they have a start command; and each web or worker component's deployment,
    as many instances as the component asks."""
    ready = (Deployment.objects.filter(RUNS_ON_NODES, project__workspace=workspace, status=Deployment.Status.READY,
                                       component__isnull=True).select_related("project").order_by("-ready_at"))
    production = set(Project.objects.filter(workspace=workspace).values_list("production_deployment_id", flat=True))
    wanted, seen = [], set()
    for d in ready:
        if not is_runtime(d):
            continue
        key = (d.project_id, d.env, d.branch)
        if d.pk in production or (d.env != "production" and key not in seen):
            wanted.append(Slot(d))
        seen.add(key)
    return wanted + _component_slots(workspace)


def _component_slots(workspace) -> list[Slot]:
    """Each deployed web or worker component's instances, within the workspace's plan (the oldest components
    first) and never of a size this platform does not have. The API refuses both; this holds whatever the rows
    say (a plan downgraded, a row written by hand)."""
    components = (Component.objects.filter(project__workspace=workspace, deployment__status=Deployment.Status.READY)
                  .exclude(kind=Component.Kind.STATIC).select_related("deployment").prefetch_related("volumes")
                  .order_by("created_at", "pk"))
    room, slots = plan_instances(workspace), []
    for component in components:
        if component.instance_size not in settings.INSTANCE_SIZES:
            logger.warning("component %s not placed: unknown instance size %r", component.pk,
                           component.instance_size)
            continue
        count = min(component.instances, room)
        if count < component.instances:
            logger.warning("component %s placed %d of its %d instances: the %s plan runs %d", component.pk, count,
                           component.instances, workspace.plan, plan_instances(workspace))
        room -= count
        slots.append(Slot(component.deployment, component, count))
    return slots


@transaction.atomic
def instances_place(*, workspace) -> None:
    """Keep every slot's instances on online nodes (the least loaded; a component with a volume on its volume's
    node); stop what no slot wants. A component's instances of an older deployment stop only once the new
    deployment's instances all run healthy, so a web component answers throughout a rollout."""
    slots = _wanted(workspace)
    # the node rows are locked first, so two heartbeats cannot place the same deployment twice
    nodes = [n for n in AgentNode.objects.select_for_update().filter(workspace=workspace, status=AgentNode.Status.ONLINE)
             if "process" in n.runtimes or "image" in n.runtimes]
    live = list(Instance.objects.filter(node__workspace=workspace, status__in=(*LIVE, "crashed"))
                .select_related("node"))  # each one's node status is read below
    loads = dict(Instance.objects.filter(node__in=nodes, status__in=LIVE).values_list("node").annotate(n=Count("id")))
    for node in nodes:
        node.load = loads.get(node.pk, 0)
    keep, now = set(), timezone.now()
    for slot in slots:
        component_id = slot.component.pk if slot.component else None
        mine = [i for i in live if i.deployment_id == slot.deployment.pk and i.component_id == component_id
                and i.node.status == AgentNode.Status.ONLINE]
        extra = sorted(mine, key=lambda i: i.created_at)[slot.count:]
        keep.update(i.pk for i in mine if i not in extra)
        for _ in range(slot.count - len(mine)):
            node = _node_for(slot, nodes)
            if node is None:
                break
            keep.add(Instance.objects.create(deployment=slot.deployment, node=node, component=slot.component).pk)
            node.load += 1
        if slot.component is not None:
            healthy = sum(1 for i in mine if i.status == "running") >= slot.count
            if not healthy:  # the old deployment's instances answer until the new ones do
                keep.update(i.pk for i in live if i.component_id == component_id
                            and i.deployment_id != slot.deployment.pk and i.status in LIVE)
    Instance.objects.filter(node__workspace=workspace, status__in=LIVE).exclude(pk__in=keep).update(
        status="stopping", updated_at=now)


def instances_place_soon(*, project_id: str) -> None:
    """Place the instances of the project's workspace once the current transaction commits (one query when it has
    no online node): what the project serves changed, so its nodes hear of it at their waiting heartbeat."""
    def place():
        node = (AgentNode.objects.select_related("workspace")
                .filter(workspace__projects=project_id, status=AgentNode.Status.ONLINE).first())
        if node is not None:
            instances_place(workspace=node.workspace)

    transaction.on_commit(place)


def _placement_due(sender, instance=None, update_fields=None, **kwargs):
    """A deployment saved ready (a build or an image ended), or a project's production moved (a rollback): the
    deployment services say so by saving, and this listens, so they need not know about nodes."""
    if sender is Deployment and instance.status == Deployment.Status.READY and (
            update_fields is None or "status" in update_fields):
        instances_place_soon(project_id=instance.project_id)
    elif sender is Project and update_fields and "production_deployment" in update_fields:
        instances_place_soon(project_id=instance.pk)


post_save.connect(_placement_due, sender=Deployment, dispatch_uid="agents-placement-deployment")
post_save.connect(_placement_due, sender=Project, dispatch_uid="agents-placement-project")


def _node_for(slot: Slot, nodes: list) -> AgentNode | None:
    """The least loaded node with room; for a component with a volume, its volume's node (set at the first
    placement)."""
    volumes = list(slot.component.volumes.all()) if slot.component else []
    pinned = next((v.node_id for v in volumes if v.node_id), None)
    runtime = "image" if (slot.deployment.snapshot or {}).get("imageDigest") else "process"
    free = [n for n in nodes if n.load < n.capacity and runtime in n.runtimes and (pinned is None or n.pk == pinned)]
    if not free:
        return None
    node = min(free, key=lambda n: n.load)
    for volume in volumes:
        if volume.node_id is None:
            Volume.objects.filter(pk=volume.pk).update(node=node)
    return node


def instance_limits(component: Component | None = None):
    """An instance's sandbox limits: its component's instance size (memory, CPU share) and volumes (disk), or the
    INSTANCE_* defaults."""
    from platform_app.sandbox import Limits

    if component is None:
        return Limits(memory_mb=settings.INSTANCE_MEMORY_MB, processes=settings.INSTANCE_PROCESSES,
                      disk_mb=settings.INSTANCE_DISK_MB, cpu_share=settings.INSTANCE_CPU_SHARE)
    size = settings.INSTANCE_SIZES[component.instance_size]
    volumes_mb = sum(v.size_gb for v in component.volumes.all()) * 1024
    return Limits(memory_mb=size["memory_mb"], processes=settings.INSTANCE_PROCESSES,
                  disk_mb=settings.INSTANCE_DISK_MB + volumes_mb, cpu_share=size["cpu"])


def _assignment(instance: Instance) -> dict:
    from platform_app.sandbox import Network
    from platform_app.services.agents.images import image_assignment
    from platform_app.services.env.env import env_resolve
    from platform_app.services.resources.managed import managed_endpoints

    d = instance.deployment
    network = Network(egress=True, allowed_networks=tuple(settings.SANDBOX_EGRESS_ALLOWED_NETWORKS),
                      dns_servers=tuple(settings.OUTBOUND_DNS_SERVERS),
                      endpoints=managed_endpoints(project=d.project))
    return {"instance_id": instance.pk, "deployment_id": d.pk, "status": instance.status,
            "artifact_url": f"/v1/agents/{instance.node_id}/artifacts/{d.pk}", "artifact_sha256": d.artifact_sha256,
            "start_command": d.snapshot.get("start", ""),
            "limits": instance_limits(instance.component).to_wire(), "network": network.to_wire(),
            "health_check_path": instance.component.health_check_path if instance.component else "",
            "max_restarts": settings.INSTANCE_MAX_RESTARTS,
            "volumes": [{"id": v.pk, "mount_path": v.mount_path, "size_gb": v.size_gb}
                        for v in (instance.component.volumes.all() if instance.component else [])],
            "image": image_assignment(d) if d.snapshot.get("imageDigest") else None,
            # a list of pairs: keys are the user's, the camelCase renderer must not touch them
            "env": [{"key": k, "value": v} for k, v in
                    env_resolve(project=d.project, environment=d.env, branch=d.branch).items()]}


def agent_artifact(*, node: AgentNode, deployment_id: str):
    """A deployment's archive for a node that runs an instance of it (404 for any other)."""
    from platform_app.services.deployments.artifacts import artifact_response

    instance = (Instance.objects.select_related("deployment").filter(node=node, deployment_id=deployment_id,
                                                                     status__in=LIVE).first())
    if instance is None or not instance.deployment.artifact_sha256:
        raise NotFound("No such deployment on this node.")
    return artifact_response(instance.deployment)


def agent_heartbeat(*, node: AgentNode, wait: float = 0.0, **reports) -> dict:
    """Apply the node's reports (checked by the API's HeartbeatInput: typed and bounded), then answer what it
    should run (and stop). An instance told to stop is `stopped` once the node no longer reports it.

    With `wait`, a heartbeat that would ask the node nothing new (it runs every assignment, nothing to stop) waits
    up to that many seconds for something to ask: a long poll, so a deployment placed on the node reaches it
    within a fraction of a second instead of at its next heartbeat. One heartbeat of a node waits at a time; any
    other sent meanwhile answers at once."""
    answer = _heartbeat_apply(node=node, **reports)
    running = [r["instance_id"] for r in reports["instances"]]
    if wait <= 0 or not _asks_nothing_new(answer, running):
        return answer
    with waiting_alone(f"agents:heartbeat-waits:{node.pk}", wait) as allowed:  # one a node; a second answers at once
        return _news_awaited(node=node, answer=answer, running=running, wait=allowed)


def _asks_nothing_new(answer: dict, running: list[str]) -> bool:
    return not answer["stop"] and all(a["instance_id"] in running for a in answer["assignments"])


def _news_awaited(*, node: AgentNode, answer: dict, running: list[str], wait: float) -> dict:
    """`answer`, or the node's next one as soon as it has something new to ask within `wait` seconds."""
    deadline = time.monotonic() + wait
    status = AgentNode.Status.DRAINING if answer["drain"] else AgentNode.Status.ONLINE
    while _asks_nothing_new(answer, running) and time.monotonic() < deadline:
        sleep_released(min(HEARTBEAT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        news = Instance.objects.filter(node=node).filter(
            Q(status="stopping") | Q(status__in=LIVE) & ~Q(pk__in=running))
        if news.exists() or not AgentNode.objects.filter(pk=node.pk, status=status).exists():
            answer = _answer(AgentNode.objects.get(pk=node.pk))
            break
    return answer


@transaction.atomic
def _heartbeat_apply(*, node: AgentNode, capacity: int | None, instances: list[dict], logs: list[dict],
                     sandbox: dict | None = None, volumes: list[dict] | None = None,
                     pulls: list[dict] | None = None) -> dict:
    node = AgentNode.objects.select_for_update().get(pk=node.pk)
    node.last_heartbeat_at = timezone.now()
    if node.status == AgentNode.Status.OFFLINE:
        node.status = AgentNode.Status.ONLINE
    if capacity is not None:
        node.capacity = capacity
    if sandbox:
        node.sandbox = sandbox
    node.save()
    for report in instances:
        peak = report["memory_peak_bytes"]
        if peak:  # the highest reported
            bigint = PositiveBigIntegerField()
            peak = {"memory_peak_bytes": Greatest(Coalesce("memory_peak_bytes", Value(0), output_field=bigint),
                                                  Value(peak), output_field=bigint)}
        Instance.objects.filter(pk=report["instance_id"], node=node).exclude(
            status__in=("stopped", "stopping")).update(status=report["status"], port=report["port"], pid=report["pid"],
                                                       restarts=report["restarts"], error=report["error"][:500],
                                                       updated_at=timezone.now(), **(peak or {}))
    Instance.objects.filter(node=node, status="stopping").exclude(
        pk__in=[r["instance_id"] for r in instances]).update(status="stopped", updated_at=timezone.now())
    for report in volumes or []:
        Volume.objects.filter(pk=report["id"], node=node).update(used_bytes=report["used_bytes"])
    lines = []
    for block in logs:
        inst = Instance.objects.filter(pk=block["instance_id"], node=node).first()
        if inst is not None:
            lines += [RuntimeLogLine(deployment_id=inst.deployment_id, instance_id=inst.pk, text=text)
                      for text in block["lines"]]
    RuntimeLogLine.objects.bulk_create(lines[:MAX_LOG_LINES])
    if pulls:
        from platform_app.services.agents.images import image_pulls_record

        image_pulls_record(node=node, pulls=pulls)
    if node.status == AgentNode.Status.ONLINE and node.workspace_id:  # the platform's builders run no instance
        instances_place(workspace=node.workspace)
    return _answer(node)


def _answer(node: AgentNode) -> dict:
    mine = Instance.objects.filter(node=node, status__in=(*LIVE, "stopping")).select_related("deployment__project")
    return {"drain": node.status == AgentNode.Status.DRAINING,
            "assignments": [_assignment(i) for i in mine if i.status != "stopping"],
            "stop": [i.pk for i in mine if i.status == "stopping"]}


@transaction.atomic
def agent_leave(*, node: AgentNode) -> AgentNode:
    """Drain: the node's instances stop here and are placed elsewhere."""
    node.status = AgentNode.Status.LEFT
    node.save(update_fields=["status"])
    node.instances.filter(status__in=LIVE).update(status="stopped", updated_at=timezone.now())
    if node.workspace_id:
        instances_place(workspace=node.workspace)
    return node


def agents_expire() -> int:
    """Nodes silent past the timeout go offline; their instances are lost and get placed again."""
    cutoff = timezone.now() - timedelta(seconds=settings.AGENT_HEARTBEAT_TIMEOUT_SECONDS)
    silent = list(AgentNode.objects.filter(status=AgentNode.Status.ONLINE, last_heartbeat_at__lt=cutoff))
    for node in silent:
        AgentNode.objects.filter(pk=node.pk).update(status=AgentNode.Status.OFFLINE)
        node.instances.filter(status__in=LIVE).update(status="lost", updated_at=timezone.now())
        if node.workspace_id:
            instances_place(workspace=node.workspace)
    return len(silent)


def running_instance(deployment, component_id: str | None = None) -> Instance | None:
    """One healthy instance of the deployment, picked at random among them (a component's several share the
    load); for a component, any healthy instance of it, its current deployment's first (during a rollout the old
    ones answer until the new ones are healthy)."""
    running = Instance.objects.select_related("node").filter(status="running", node__status=AgentNode.Status.ONLINE,
                                                             port__isnull=False)
    running = list(running.filter(component_id=component_id) if component_id else running.filter(deployment=deployment))
    current = [i for i in running if i.deployment_id == deployment.pk]
    return random.choice(current or running) if running else None


def node_get(*, workspace, node_id: str) -> AgentNode:
    node = AgentNode.objects.filter(workspace=workspace, pk=node_id).first()
    if node is None:
        raise NotFound("No such node.")
    return node
