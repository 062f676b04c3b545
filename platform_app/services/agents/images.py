"""Image deployments: a project's image, pinned to a digest when the deployment is triggered, run by the nodes that
report the `image` runtime (docs/images.md); the project's registry credentials, kept encrypted, never answered.

Why the web process resolves the tag: the digest is then known from the first moment, recorded in the snapshot
(`imageDigest`) before any node exists or pulls, so the deployment page, a rollback and every later placement (a
restart, another node, a rollback) run exactly that image, whichever node comes first and however late; and a
wrong password, a missing tag or an image over the limits ends the deployment at once with the registry's answer.
It costs the web process two or three small requests (manifests, no layers) through the outbound guard, bounded by
its timeouts. The layers are pulled by the nodes only.
"""
import json
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ValidationFailed
from platform_app.models import AgentNode, Deployment
from platform_app.services.billing.caps import usage_cap_enforce
from platform_app.services.deployments.builds import deployment_finish_error, deployment_finish_ready
from platform_app.services.deployments.deployment_log import event_record, log_append
from platform_app.services.deployments.deployments import environment_require
from platform_app.services.env.crypto import decrypt, encrypt
from platform_app.services.teams.audit import audit_record

logger = logging.getLogger(__name__)
NO_IMAGE_NODE = ("No online node of this workspace runs images (the `image` runtime, which needs bubblewrap); "
                 "image deployments need one.")


def is_image(deployment) -> bool:
    return bool((deployment.snapshot or {}).get("imageDigest"))


# Registry credentials -----------------------------------------------------------------------------------------
def _credentials_check(value: str, field: str, limit: int) -> str:
    if not value or len(value) > limit or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValidationFailed(f"`{field}` must be 1 to {limit} printable characters.",
                               details={field: [f"1 to {limit} printable characters."]})
    return value


@transaction.atomic
def registry_credentials_set(*, project, username: str, password: str, actor=None, ip: str = "") -> None:
    """Set or replace the project's registry credentials (an image project's only), encrypted at rest."""
    if project.source != project.Source.IMAGE:
        raise ValidationFailed("Only a project made from an image (source: image) pulls from a registry.",
                               code="not_an_image_project", details={"source": ["Not an image project."]})
    _credentials_check(username, "username", 200)
    _credentials_check(password, "password", 4096)
    project.registry_credentials_encrypted = encrypt(json.dumps({"username": username, "password": password}))
    project.save(update_fields=["registry_credentials_encrypted", "updated_at"])
    audit_record(workspace=project.workspace, actor=actor, action="project.registry_credentials_set",
                 target=project, data={"registry": _registry_of(project)}, ip=ip)


@transaction.atomic
def registry_credentials_remove(*, project, actor=None, ip: str = "") -> None:
    """Forget the project's registry credentials: its registry is asked anonymously again."""
    if project.registry_credentials_encrypted:
        project.registry_credentials_encrypted = ""
        project.save(update_fields=["registry_credentials_encrypted", "updated_at"])
        audit_record(workspace=project.workspace, actor=actor, action="project.registry_credentials_removed",
                     target=project, data={"registry": _registry_of(project)}, ip=ip)


def registry_credentials(project) -> dict:
    """{"username", "password"} for the project's registry, or {} (for the pull only: never answered)."""
    if not project.registry_credentials_encrypted:
        return {}
    return json.loads(decrypt(project.registry_credentials_encrypted))


def _registry_of(project) -> str:
    from platform_app.nodes import oci  # httpx loads where a registry is asked, not with every web worker

    try:
        return oci.Reference.parse(project.image_ref).registry
    except oci.RegistryError:
        return ""


# Deployments --------------------------------------------------------------------------------------------------
@transaction.atomic
def _image_deployment_create(*, project, image: str, env: str, actor) -> Deployment:
    environment_require(project=project, env=env)
    usage_cap_enforce(workspace=project.workspace)  # 402, as deployment_trigger: image deploys do not pass there
    deployment = Deployment.objects.create(project=project, env=env, branch="", trigger="api",
                                           status=Deployment.Status.BUILDING, started_at=timezone.now(),
                                           created_by=actor if getattr(actor, "pk", None) else None,
                                           snapshot={"image": image})
    event_record(deployment, "queued", f"image {image}")
    audit_record(workspace=project.workspace, actor=actor, action="deployment.created", target=deployment,
                 data={"env": env, "image": image, "trigger": "api"})
    return deployment


def deployment_from_image(*, project, image_ref: str, env: str, actor=None) -> Deployment:
    """Deploy the project's image (or `image_ref`): resolve its tag to a digest now, through the outbound guard
    and with the project's credentials, record it in the snapshot, and make the deployment ready for the nodes
    that report the `image` runtime to pull and run. Ends `error` with the registry's answer, the limit hit, or
    when no online node of the workspace runs images."""
    from platform_app.nodes import oci  # httpx loads where a registry is asked, not with every web worker

    image = (image_ref or project.image_ref or "").strip()
    if not image:
        raise ValidationFailed("This project has no image: name one in imageRef.",
                               details={"imageRef": ["Required for a project without an image."]})
    try:
        reference = oci.Reference.parse(image)
    except oci.RegistryError as exc:
        raise ValidationFailed(str(exc), details={"imageRef": ["Not an image reference."]})
    deployment = _image_deployment_create(project=project, image=image, env=env, actor=actor)
    online = AgentNode.objects.filter(workspace=project.workspace, status=AgentNode.Status.ONLINE)
    if not any("image" in n.runtimes for n in online):
        deployment_finish_error(deployment, NO_IMAGE_NODE)
        deployment.refresh_from_db()
        return deployment
    credentials = registry_credentials(project) if reference.registry == _registry_of(project) else {}
    log_append(deployment, f"Resolving {reference} at {reference.registry}"
                           f"{' with the project credentials' if credentials else ''}.", stream="system")
    try:
        resolved = oci.resolve(reference, check=oci.platform_check(), max_bytes=settings.IMAGE_MAX_BYTES,
                               max_layers=settings.IMAGE_MAX_LAYERS, **credentials)
    except oci.RegistryError as exc:
        deployment_finish_error(deployment, str(exc))
        deployment.refresh_from_db()
        return deployment
    log_append(deployment, f"{reference} is {resolved['digest']} (linux/amd64 manifest "
                           f"{resolved['manifestDigest']}): {resolved['layers']} layers, {resolved['bytes']} bytes "
                           f"compressed, resolved in {resolved['seconds']}s.", stream="system")
    from platform_app.services.env.env import env_snapshot

    snapshot = {"image": image, "imageDigest": resolved["digest"], "imageManifestDigest": resolved["manifestDigest"],
                "registry": reference.registry, "imageRepository": reference.name, "imageBytes": resolved["bytes"],
                "imageLayers": resolved["layers"],
                "env": env_snapshot(project=project, environment=env, branch="")}
    deployment_finish_ready(deployment, framework="docker", snapshot=snapshot)
    deployment.refresh_from_db()
    return deployment


def image_assignment(deployment) -> dict:
    """What a node needs to pull a deployment's image: the digest (never the tag), the project's credentials,
    the bounds, and the outbound rules its registry requests follow (the platform's, as the web process follows
    them)."""
    snapshot = deployment.snapshot
    reference = f"{snapshot['registry']}/{snapshot['imageRepository']}@{snapshot['imageDigest']}"
    credentials = (registry_credentials(deployment.project)
                   if snapshot["registry"] == _registry_of(deployment.project) else {})
    return {"reference": reference, "digest": snapshot["imageDigest"], **credentials,
            "max_bytes": settings.IMAGE_MAX_BYTES, "max_layers": settings.IMAGE_MAX_LAYERS,
            "cache_max_bytes": settings.IMAGE_CACHE_MAX_BYTES, "allow_http": settings.OUTBOUND_ALLOW_HTTP,
            "networks": list(settings.OUTBOUND_ALLOWED_NETWORKS), "dns": list(settings.OUTBOUND_DNS_SERVERS)}


def image_pulls_record(*, node, pulls: list[dict]) -> None:
    """What a node's pulls did, into each deployment's log (the layers, cached or fetched, the digest)."""
    from platform_app.models import Instance

    for pull in pulls:
        instance = Instance.objects.select_related("deployment").filter(pk=pull["instance_id"], node=node).first()
        if instance is None:
            continue
        for line in pull["lines"]:
            log_append(instance.deployment, f"[{node.name}] {line}", stream="system")
