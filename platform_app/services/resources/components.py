"""Components: a project's services (`web`, `worker`, `static`), each deployed on its own and run as `instances`
copies of its instance size on the workspace's agents (docs/resources.md).

- A component deploy is a build of the project (the component's build command, if it has one) whose snapshot
  starts the component's command; once ready it becomes the component's deployment and placement rolls it out:
  new instances start, and the old ones stop only when the new ones pass their health check (no gap for `web`).
- An instance size is the instance's sandbox limits (CPU share, memory); the workspace's plan caps the
  instances of all its components together (402 `plan_limit`). Once the workspace's usage cap is reached, a
  change that would run more instances or dearer ones is refused like a deploy (402 `usage_cap_reached`).
- A volume is a folder on the node that first runs its component, mounted into the instance's sandbox; it pins
  the component to that node and keeps it at one instance; a running component's volume cannot be deleted.
"""
import re

from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from config.errors import ApplicationError, Conflict, NotFound, ValidationFailed
from platform_app.models import Component, Instance, Volume
from platform_app.services.edge.hostcache import edge_hosts_invalidate
from platform_app.services.teams.audit import audit_record

NAME = re.compile(r"^[a-z][a-z0-9-]{0,29}$")
RESERVED_MOUNTS = ("/usr", "/etc", "/proc", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/tmp",
                   "/home/sandbox", "/opt/sandbox", "/var/tmp")
LIVE = ("assigned", "starting", "running")
MAX_INSTANCES = 100


class PlanLimit(ApplicationError):
    status, code = 402, "plan_limit"


def instance_sizes() -> list[dict]:
    return [{"id": key, "cpu": size["cpu"], "memory_mb": size["memory_mb"],
             "price_per_hour": size["price_per_hour"], "currency": settings.PRICES_CURRENCY}
            for key, size in settings.INSTANCE_SIZES.items()]


def components_list(*, project) -> list[Component]:
    return list(Component.objects.filter(project=project).select_related("deployment"))


def component_get(*, project, component_id: str) -> Component:
    component = Component.objects.filter(project=project).filter(pk=component_id).first() or \
        Component.objects.filter(project=project, name=component_id).first()
    if component is None:
        raise NotFound("No such component.")
    return component


def _check(component: Component) -> None:
    """The rules a component's settings keep, created or changed (400 naming the field, 402, 409)."""
    if not NAME.match(component.name or ""):
        raise ValidationFailed("The name must be 1 to 30 of a-z, 0-9 and -, starting with a letter.",
                               details={"name": ["Invalid name."]})
    if component.kind not in Component.Kind.values:
        raise ValidationFailed("kind must be web, worker or static.", details={"kind": ["Invalid kind."]})
    if component.kind != Component.Kind.STATIC and not component.start_command.strip():
        raise ValidationFailed(f"A {component.kind} component needs a start command.",
                               details={"startCommand": ["Required for this kind."]})
    if component.instance_size not in settings.INSTANCE_SIZES:
        known = ", ".join(settings.INSTANCE_SIZES)
        raise ValidationFailed(f"Unknown instance size {component.instance_size!r} (known: {known}).",
                               details={"instanceSize": ["Unknown size."]})
    if not 0 <= component.instances <= MAX_INSTANCES:
        raise ValidationFailed(f"instances must be 0 to {MAX_INSTANCES}.", details={"instances": ["Out of range."]})
    if component.health_check_path and not component.health_check_path.startswith("/"):
        raise ValidationFailed("healthCheckPath must start with /.", details={"healthCheckPath": ["Invalid path."]})
    if component.instances > 1 and component.pk and component.volumes.exists():
        raise Conflict("A component with a volume runs one instance.", code="volume_single_instance",
                       details={"instances": ["At most 1 with a volume."]})
    _check_plan(component)


def plan_instances(workspace) -> int:
    """How many component instances the workspace's plan runs (an unknown plan: the free one's)."""
    return (settings.PLANS.get(workspace.plan) or settings.PLANS["free"])["instances"]


def _check_plan(component: Component) -> None:
    workspace = component.project.workspace
    limit = plan_instances(workspace)
    others = (Component.objects.filter(project__workspace=workspace).exclude(pk=component.pk)
              .exclude(kind=Component.Kind.STATIC).aggregate(n=Sum("instances"))["n"] or 0)
    wanted = 0 if component.kind == Component.Kind.STATIC else component.instances
    if others + wanted > limit:
        raise PlanLimit(f"The {workspace.plan} plan runs at most {limit} instances across the workspace's "
                        f"components; {others} are taken.",
                        details={"plan": workspace.plan, "limit": limit, "used": others})


def _spends_more(before: Component | None, after: Component) -> bool:
    """More running instances, or each of them dearer, than before (a new component: any instance at all)."""
    if after.kind == Component.Kind.STATIC:
        return False
    price = lambda c: settings.INSTANCE_SIZES.get(c.instance_size, {}).get("price_per_hour", 0)  # noqa: E731
    if before is None:
        return after.instances > 0
    return after.instances > before.instances or price(after) > price(before)


def _cap_check(before: Component | None, after: Component) -> None:
    """402 `usage_cap_reached`, as a deploy, for a change that would spend more once the cap is reached; fewer or
    cheaper instances stay allowed, so a capped workspace can always shrink."""
    from platform_app.services.billing.caps import usage_cap_enforce

    if _spends_more(before, after):
        usage_cap_enforce(workspace=after.project.workspace)


@transaction.atomic
def component_create(*, project, name: str, kind: str, start_command: str = "", build_command: str = "",
                     instance_size: str = "starter", instances: int = 1, health_check_path: str | None = None,
                     actor=None, ip: str = "") -> Component:
    if health_check_path is None:
        health_check_path = "/" if kind == Component.Kind.WEB else ""
    component = Component(project=project, name=name, kind=kind, start_command=start_command,
                          build_command=build_command, instance_size=instance_size,
                          instances=0 if kind == Component.Kind.STATIC else instances,
                          health_check_path=health_check_path)
    _check(component)
    _cap_check(None, component)
    if Component.objects.filter(project=project, name=name).exists():
        raise Conflict(f"The project already has a component named {name}.", code="component_exists",
                       details={"name": ["Already in use."]})
    component.save()
    audit_record(workspace=project.workspace, actor=actor, action="component.created", target=component,
                 data={"name": name, "kind": kind, "size": instance_size, "instances": component.instances}, ip=ip)
    return component


EDITABLE = ("start_command", "build_command", "instance_size", "instances", "health_check_path")


@transaction.atomic
def component_update(*, project, component_id: str, actor=None, ip: str = "", **changes) -> Component:
    component = Component.objects.select_for_update().get(pk=component_get(project=project,
                                                                           component_id=component_id).pk)
    before = Component(kind=component.kind, instances=component.instances, instance_size=component.instance_size)
    changed = {k: v for k, v in changes.items() if k in EDITABLE and v is not None and getattr(component, k) != v}
    for key, value in changed.items():
        setattr(component, key, value)
    _check(component)
    _cap_check(before, component)
    component.save()
    if changed:
        audit_record(workspace=project.workspace, actor=actor, action="component.updated", target=component,
                     data=changed, ip=ip)
    return component


@transaction.atomic
def component_delete(*, project, component_id: str, actor=None, ip: str = "") -> Component:
    """Its instances stop (their rows go with it, so the agents stop them at their next heartbeat); its volumes
    and their folders go too."""
    component = component_get(project=project, component_id=component_id)
    audit_record(workspace=project.workspace, actor=actor, action="component.deleted", target=component,
                 data={"name": component.name}, ip=ip)
    component.delete()
    edge_hosts_invalidate(project_id=project.pk)
    return component


def component_deploy(*, project, component_id: str, actor=None, ip: str = "", idempotency_key: str | None = None):
    """Build the project for this component; the deployment becomes the component's once ready. Its settings are
    checked again, the plan too: the workspace's plan may have shrunk, or a row may hold what the API refuses."""
    from platform_app.services.deployments.deployments import deployment_trigger

    component = component_get(project=project, component_id=component_id)
    _check(component)
    return deployment_trigger(project=project, env="production", branch=None, trigger="api", actor=actor, ip=ip,
                              idempotency_key=idempotency_key, idempotency_scope=f"component:{component.pk}:",
                              component=component)


def component_status(component: Component, instances: list[Instance] | None = None) -> str:
    """`idle` (never deployed), `stopped` (no instance wanted), `deploying` (instances of its deployment not all
    healthy yet), `running`, `crashed` (an instance gave up restarting)."""
    if component.deployment_id is None:
        return "idle"
    if component.kind == Component.Kind.STATIC:
        return "running"
    if component.instances == 0:
        return "stopped"
    if instances is None:
        instances = list(Instance.objects.filter(component=component, deployment_id=component.deployment_id))
    current = [i for i in instances if i.deployment_id == component.deployment_id]
    if any(i.status == "crashed" for i in current):
        return "crashed"
    healthy = sum(1 for i in current if i.status == "running")
    return "running" if healthy >= component.instances else "deploying"


# -- volumes ----------------------------------------------------------------------------------------------------
def volumes_list(*, component) -> list[Volume]:
    return list(component.volumes.all())


@transaction.atomic
def volume_create(*, project, component_id: str, name: str, mount_path: str, size_gb: int, actor=None,
                  ip: str = "") -> Volume:
    component = Component.objects.select_for_update().get(pk=component_get(project=project,
                                                                           component_id=component_id).pk)
    if not NAME.match(name or ""):
        raise ValidationFailed("The name must be 1 to 30 of a-z, 0-9 and -, starting with a letter.",
                               details={"name": ["Invalid name."]})
    path = (mount_path or "").rstrip("/")
    if (not path.startswith("/") or "//" in path or "/." in path or len(path) > 200
            or any(path == r or path.startswith(r + "/") for r in RESERVED_MOUNTS)):
        raise ValidationFailed("mountPath must be an absolute path outside the system's folders (e.g. /data).",
                               details={"mountPath": ["Invalid path."]})
    if not 1 <= size_gb <= settings.VOLUME_MAX_GB:
        raise ValidationFailed(f"sizeGb must be 1 to {settings.VOLUME_MAX_GB}.", details={"sizeGb": ["Out of range."]})
    if component.kind == Component.Kind.STATIC:
        raise ValidationFailed("A static component has no instance to mount a volume in.",
                               details={"componentId": ["Static component."]})
    if component.instances > 1:
        raise Conflict("A component with a volume runs one instance: set its instances to 1 first.",
                       code="volume_single_instance", details={"instances": ["At most 1 with a volume."]})
    if component.volumes.filter(name=name).exists() or component.volumes.filter(mount_path=path).exists():
        raise Conflict("The component already has a volume of that name or mount path.", code="volume_exists")
    volume = Volume.objects.create(component=component, name=name, mount_path=path, size_gb=size_gb)
    audit_record(workspace=project.workspace, actor=actor, action="volume.created", target=volume,
                 data={"component": component.name, "mount_path": path, "size_gb": size_gb}, ip=ip)
    return volume


@transaction.atomic
def volume_delete(*, project, component_id: str, volume_id: str, actor=None, ip: str = "") -> Volume:
    component = component_get(project=project, component_id=component_id)
    volume = component.volumes.filter(pk=volume_id).first()
    if volume is None:
        raise NotFound("No such volume.")
    if Instance.objects.filter(component=component, status__in=LIVE).exists():
        raise Conflict("The component is running: stop it (instances 0) before deleting its volume.",
                       code="component_running")
    audit_record(workspace=project.workspace, actor=actor, action="volume.deleted", target=volume,
                 data={"component": component.name, "mount_path": volume.mount_path}, ip=ip)
    volume.delete()
    return volume
