"""Deploy hooks: a secret URL that deploys a branch."""
import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import NotFound
from platform_app.models import DeployHook
from platform_app.services.identity.keys import sha256_hex


def hook_url(secret: str) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/v1/hooks/deploy/{secret}"


@transaction.atomic
def hook_create(*, project, name: str, branch: str | None) -> tuple[DeployHook, str]:
    secret = "dh_" + secrets.token_urlsafe(32)
    hook = DeployHook.objects.create(project=project, name=name, branch=branch or project.production_branch,
                                     secret_hash=sha256_hex(secret))
    return hook, secret


def hook_delete(*, project, hook_id: str) -> None:
    deleted, _ = DeployHook.objects.filter(project=project, pk=hook_id).delete()
    if not deleted:
        raise NotFound("No such deploy hook.")


def hook_fire(*, secret: str, idempotency_key: str | None = None):
    """Look the hook up by the hash of its secret (no secret is compared in Python), then deploy its branch."""
    from platform_app.services.deployments.deployments import deployment_trigger
    from platform_app.services.env.env import environment_for_branch

    hook = DeployHook.objects.select_related("project__workspace").filter(secret_hash=sha256_hex(secret)).first()
    if hook is None:
        raise NotFound("No such deploy hook.")
    deployment = deployment_trigger(project=hook.project, env=environment_for_branch(hook.project, hook.branch),
                                    branch=hook.branch, trigger="hook",
                                    idempotency_key=idempotency_key, idempotency_scope=f"hook:{hook.pk}:")
    DeployHook.objects.filter(pk=hook.pk).update(last_triggered_at=timezone.now())
    return deployment
