"""Workspace connections to code hosts: create, list repositories, clone URLs, installations, disconnect."""
from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, NotFound
from platform_app.models import GitConnection, GitInstallation
from platform_app.providers import git_host
from platform_app.services.teams.audit import audit_record
from platform_app.services.env.crypto import decrypt, encrypt


@transaction.atomic
def connection_save(*, workspace, provider: str, token: str = "", account: str = "", installation_id: str = "",
                    actor=None) -> GitConnection:
    conn, _ = GitConnection.objects.select_for_update().get_or_create(workspace=workspace, provider=provider)
    if token:
        conn.token_encrypted = encrypt(token)
    conn.account = account or conn.account
    conn.installation_id = installation_id or conn.installation_id
    conn.created_by = conn.created_by or (actor if getattr(actor, "pk", None) else None)
    conn.save()
    audit_record(workspace=workspace, actor=actor, action="git.connected", target=conn,
                 data={"provider": provider, "account": conn.account})
    return conn


def connection_get(*, workspace, provider: str) -> GitConnection:
    conn = GitConnection.objects.filter(workspace=workspace, provider=provider).first()
    if conn is None:
        raise NotFound(f"This workspace has no {provider} connection.")
    return conn


def _token(conn: GitConnection) -> str:
    if not conn.token_encrypted:
        raise Conflict("The connection has no user token yet; link your account (user-link) first.",
                       code="connection_without_token")
    return decrypt(conn.token_encrypted)


def repos_list(*, workspace, provider: str) -> list[dict]:
    conn = connection_get(workspace=workspace, provider=provider)
    return git_host(provider).repos(_token(conn), conn.installation_id)


def clone_url_for(*, workspace, provider: str, repo: str) -> str:
    conn = connection_get(workspace=workspace, provider=provider)
    return git_host(provider).clone_url(_token(conn), repo)


@transaction.atomic
def connection_delete(*, workspace, provider: str, actor=None) -> None:
    conn = connection_get(workspace=workspace, provider=provider)
    audit_record(workspace=workspace, actor=actor, action="git.disconnected", target=conn, data={"provider": provider})
    GitInstallation.objects.filter(workspace=workspace, installation_id=conn.installation_id).update(workspace=None,
                                                                                                     claimed_at=None)
    conn.delete()


def installation_record(*, installation_id: str, account: str = "", workspace=None) -> GitInstallation:
    inst, _ = GitInstallation.objects.get_or_create(installation_id=str(installation_id),
                                                    defaults={"account": account})
    if workspace is not None and inst.workspace_id is None:
        inst.workspace, inst.claimed_at = workspace, timezone.now()
    inst.account = account or inst.account
    inst.save()
    return inst


def installation_event(*, payload: dict, event: str) -> None:
    """Webhook `installation` events: record new installations (unclaimed), forget deleted ones."""
    inst = payload.get("installation") or {}
    if not inst.get("id"):
        return
    if payload.get("action") == "deleted":
        GitInstallation.objects.filter(installation_id=str(inst["id"])).delete()
        return
    installation_record(installation_id=str(inst["id"]), account=(inst.get("account") or {}).get("login", ""))


@transaction.atomic
def installation_claim(*, workspace, installation_id: str, actor=None) -> GitConnection:
    inst = GitInstallation.objects.select_for_update().filter(installation_id=str(installation_id),
                                                               workspace__isnull=True).first()
    if inst is None:
        raise NotFound("No unclaimed installation with this id.")
    inst.workspace, inst.claimed_at = workspace, timezone.now()
    inst.save()
    return connection_save(workspace=workspace, provider="git-a", account=inst.account,
                           installation_id=inst.installation_id, actor=actor)


def pull_request_create(*, workspace, provider: str, repo: str, base: str, head: str, title: str, body: str,
                        files: dict | None = None, file_fixes: dict | None = None) -> dict:
    """Open a pull request through the connection. `file_fixes` maps a path to a function of its current text
    (None when absent) giving the new text."""
    from config.errors import ApplicationError

    host = git_host(provider)
    if not hasattr(host, "pull_request"):
        raise ApplicationError(f"Opening pull requests through {provider} is not supported yet.",
                               code="provider_unsupported", status=501)
    token = _token(connection_get(workspace=workspace, provider=provider))
    files = dict(files or {})
    for path, fix in (file_fixes or {}).items():
        files[path] = fix(host.file_text(token, repo=repo, ref=base, path=path))
    return host.pull_request(token, repo=repo, base=base, head=head, title=title, body=body, files=files)
