"""What a page of deployments or nodes shows beyond its own rows, looked up once per page instead of once
per item (a single deployment is a page of one: `deployments.queue_position` and `needs_redeploy` call these)."""
from collections import defaultdict

from django.db.models import Count, Q

from platform_app.models import AgentNode, Deployment, EnvVarSlot, Instance
from platform_app.services.env.env import env_hash, slots_choose, value_of

S = Deployment.Status


def queue_positions(*, deployments) -> dict[str, int | None]:
    """Deployment id → 1-based place in the build queue (None when not queued); one query."""
    queued = [d for d in deployments if d.status == S.QUEUED]
    positions = {d.pk: None for d in deployments}
    if not queued:
        return positions
    ahead = Deployment.objects.filter(status=S.QUEUED).aggregate(
        **{f"d{i}": Count("pk", filter=Q(created_at__lt=d.created_at)) for i, d in enumerate(queued)})
    positions.update({d.pk: ahead[f"d{i}"] + 1 for i, d in enumerate(queued)})
    return positions


def redeploy_flags(*, deployments) -> dict[str, bool]:
    """Deployment id → whether its environment variables changed since it was built; one query."""
    built = {d.pk: ((d.snapshot or {}).get("env") or {}).get("hash") for d in deployments}
    candidates = [d for d in deployments if d.status == S.READY and built[d.pk]]
    flags = {d.pk: False for d in deployments}
    if not candidates:
        return flags
    slots = defaultdict(list)
    for slot in EnvVarSlot.objects.filter(
            project_id__in={d.project_id for d in candidates}, target__in={d.env for d in candidates},
            branch__in={"", *(d.branch or "" for d in candidates)}).select_related("env_var"):
        slots[(slot.project_id, slot.target)].append(slot)
    values, hashes = {}, {}
    for d in candidates:
        key = (d.project_id, d.env, d.branch or "")
        if key not in hashes:
            chosen = slots_choose(slots[(d.project_id, d.env)], d.branch)
            for var, _ in chosen:
                if var.pk not in values:
                    values[var.pk] = value_of(var)  # decrypt each variable once per page
            hashes[key] = env_hash({var.key: values[var.pk] for var, _ in chosen})
        flags[d.pk] = hashes[key] != built[d.pk]
    return flags


def deployment_list_context(*, deployments) -> dict:
    """Serializer context for a page of deployments."""
    return {"queue_positions": queue_positions(deployments=deployments),
            "redeploy_flags": redeploy_flags(deployments=deployments)}


def nodes_running_counts(*, nodes) -> dict[str, int]:
    """Node id → number of its running instances; one query."""
    counts = dict(Instance.objects.filter(node__in=[n.pk for n in nodes], status="running")
                  .values_list("node").annotate(n=Count("pk")).order_by())
    return {n.pk: counts.get(n.pk, 0) for n in nodes}


def nodes_list(*, workspace) -> list[AgentNode]:
    return list(AgentNode.objects.filter(workspace=workspace).exclude(status="left"))
