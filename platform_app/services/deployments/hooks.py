"""Deploy hooks: a secret URL that deploys a branch."""
import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import NotFound, RateLimited
from platform_app.models import DeployHook, Deployment
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
    """Look the hook up by the hash of its secret (no secret is compared in Python), then deploy its branch.

    One queued build per hook at a time: while the hook's last build has not started, a call is 429 (with
    Retry-After), so a leaked or looping hook cannot fill the queue; the queued build will build the branch as it
    is when it starts. A retry with the Idempotency-Key of an earlier call still answers that call's deployment."""
    from platform_app.services.deployments.deployments import deployment_trigger
    from platform_app.services.env.env import environment_for_branch

    with transaction.atomic():
        # the row lock makes concurrent calls of one hook take turns: only the first sees no queued build
        hook = (DeployHook.objects.select_for_update(of=("self",)).select_related("project__workspace", "last_deployment")
                .filter(secret_hash=sha256_hex(secret)).first())
        if hook is None:
            raise NotFound("No such deploy hook.")
        scope = f"hook:{hook.pk}:"
        if idempotency_key:
            replay = Deployment.objects.filter(project=hook.project, idempotency_key=f"{scope}{idempotency_key}").first()
            if replay is not None:
                replay._replayed = True
                return replay
        queued = hook.last_deployment
        if queued is not None and queued.status == Deployment.Status.QUEUED:
            wait = settings.DEPLOY_HOOK_RETRY_AFTER_SECONDS
            raise RateLimited("This hook's last build has not started yet; it will build the latest commit.",
                              retry_after=wait, details={"retryAfter": wait, "deploymentId": queued.pk})
        deployment = deployment_trigger(project=hook.project, env=environment_for_branch(hook.project, hook.branch),
                                        branch=hook.branch, trigger="hook",
                                        idempotency_key=idempotency_key, idempotency_scope=scope)
        DeployHook.objects.filter(pk=hook.pk).update(last_triggered_at=timezone.now(), last_deployment=deployment)
    return deployment
