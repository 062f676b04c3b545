"""Inbound code-host webhooks: verify the signature over the raw body, deploy pushes once per delivery."""
import hashlib
import hmac

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from config.errors import Unauthenticated, ValidationFailed
from platform_app.models import Project, WebhookDelivery


def signature_valid(secret: str, body: bytes, header: str) -> bool:
    """GitHub's scheme: `sha256=<hex HMAC-SHA256 of the raw body>`, compared in constant time."""
    if not secret or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256="))


def _repository_urls(repo: dict) -> set[str]:
    urls = {repo.get(k) for k in ("clone_url", "ssh_url", "git_url", "html_url", "url") if repo.get(k)}
    return urls | {u.removesuffix(".git") for u in urls} | {u + ".git" for u in urls if not u.endswith(".git")}


def push_deploy(*, payload: dict) -> list[str]:
    """Deploy every auto-deploying project of the pushed repository and branch."""
    from platform_app.services.deployments.deployments import deployment_trigger
    from platform_app.services.env.env import environment_for_branch

    ref = payload.get("ref", "")
    if not ref.startswith("refs/heads/") or payload.get("deleted"):
        return []
    branch = ref.removeprefix("refs/heads/")
    repo = payload.get("repository") or {}
    projects = Project.objects.filter(auto_deploy=True).filter(
        Q(git_url__in=_repository_urls(repo)) | Q(git_provider="git-a", git_repo=repo.get("full_name") or "-"))
    return [deployment_trigger(project=p, env=environment_for_branch(p, branch), branch=branch, trigger="git").pk
            for p in projects]


def webhook_receive(*, event: str, delivery_id: str, body: bytes, signature: str, payload_loader) -> dict:
    if not signature_valid(settings.GIT_A_WEBHOOK_SECRET, body, signature):
        raise Unauthenticated("The webhook signature does not match.", code="invalid_signature")
    if event == "ping":
        return {"ok": True, "event": "ping"}
    if event not in ("push", "installation", "installation_repositories"):
        return {"ok": True, "event": event, "ignored": True}
    try:
        payload = payload_loader()
    except ValueError:
        raise ValidationFailed("The webhook body is not JSON.")
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(provider="git-a", delivery_id=delivery_id or "-", event=event)
            if event == "push":
                delivery.deployments = push_deploy(payload=payload)
                delivery.save(update_fields=["deployments"])
            else:
                _installation(payload=payload, event=event)
    except IntegrityError:
        return {"ok": True, "event": event, "duplicate": True}
    return {"ok": True, "event": event, "deployments": delivery.deployments}


def _installation(*, payload: dict, event: str) -> None:
    """Installation events belong to the Git provider connections; recorded there when that area exists."""
    try:
        from platform_app.services.providers.git_connections import installation_event
    except ImportError:
        return
    installation_event(payload=payload, event=event)


