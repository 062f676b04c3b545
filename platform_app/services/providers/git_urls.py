"""Which repository URLs git may read, and how.

- A URL a user gives (a project's `gitUrl`, `/v1/framework/*`) must be `https` (or `http` where
  OUTBOUND_ALLOW_HTTP) and pass the outbound guard (`config/outbound.py`). Redirects are resolved here, with
  the guard on every hop (`<url>/info/refs?service=git-upload-pack`); git then gets the final URL, pinned to
  the checked address (`http.curloptResolve`), with redirects off and a low-speed limit. `file://`, bare
  paths, `ssh://`, `git://`, scp-style `host:path` and `ext::` are refused under every settings module.
- A repository the platform hosts itself (template projects) is read from disk, and only when its path
  resolves inside `GIT_HOSTED_ROOT/<the project's workspace id>/`.
- A provider repository (`provider` + `repo`) is cloned with the connection's token, sent as an HTTP
  header, never in the URL or on git's command line.
"""
import base64
import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from django.conf import settings

from config.errors import ValidationFailed
from config.outbound import UNREACHABLE, OutboundRefused, outbound_request

logger = logging.getLogger("outbound")
INFO_REFS = "/info/refs?service=git-upload-pack"


class GitUnreachable(ValidationFailed):
    """Refused or unreadable repository: one message, whatever the cause (the cause is logged)."""

    status, code, default_message = 400, "git_unreachable", UNREACHABLE


@dataclass(frozen=True)
class GitRemote:
    """A repository git may read: the URL to hand it and the environment that pins it."""

    url: str
    label: str                                  # safe to show: no server path, no credential
    protocols: str                              # GIT_ALLOW_PROTOCOL
    config: tuple[tuple[str, str], ...] = ()    # passed as GIT_CONFIG_* variables, never as arguments

    @property
    def env(self) -> dict:
        env = {"GIT_ALLOW_PROTOCOL": self.protocols, "GIT_PROTOCOL_FROM_USER": "0",
               "GIT_CONFIG_COUNT": str(len(self.config))}
        for i, (key, value) in enumerate(self.config):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
        return env


def _refuse(url: str, reason: str):
    logger.info("git url refused %r: %s", (url or "")[:300], reason)
    raise GitUnreachable()


def git_remote_for_url(url: str, *, authorization: str = "") -> GitRemote:
    """A user's repository URL through the outbound guard (module docstring); GitUnreachable otherwise."""
    url = (url or "").strip()
    parts = urlsplit(url) if "://" in url else None
    # Only a plain URL: no option-looking argument, no query or fragment for git to misread.
    if parts is None or url.startswith("-") or parts.query or parts.fragment or url.endswith("?"):
        _refuse(url, "not an http(s) URL")
    base = url.rstrip("/")
    headers = {"User-Agent": "git/2.39 (platform)"} | ({"Authorization": authorization} if authorization else {})
    try:
        probe = outbound_request("GET", base + INFO_REFS, purpose="git", headers=headers, read_body=False)
    except OutboundRefused:
        raise GitUnreachable()
    if probe.status_code >= 400 or not probe.url.endswith(INFO_REFS):
        _refuse(url, f"info/refs answered {probe.status_code} at {probe.url}")
    target = probe.target
    final = probe.url.removesuffix(INFO_REFS)
    config = [("http.followRedirects", "false"), ("http.sslVerify", "true"), ("credential.helper", ""),
              ("http.lowSpeedLimit", str(settings.GIT_LOW_SPEED_LIMIT_BYTES)),
              ("http.lowSpeedTime", str(settings.GIT_LOW_SPEED_TIME_SECONDS))]
    if not target.is_literal:  # git connects where the guard looked, not where a second lookup points
        addresses = ",".join(f"[{a}]" if ":" in a else a for a in target.addresses)
        config.append(("http.curloptResolve", f"{target.host}:{target.port}:{addresses}"))
    if getattr(settings, "OUTBOUND_CA_BUNDLE", ""):
        config.append(("http.sslCAInfo", settings.OUTBOUND_CA_BUNDLE))
    if authorization:
        config.append(("http.extraHeader", f"Authorization: {authorization}"))
    protocols = "https:http" if settings.OUTBOUND_ALLOW_HTTP else "https"
    return GitRemote(url=final, label=_without_userinfo(url), protocols=protocols, config=tuple(config))


def git_remote_for_provider(*, workspace, provider: str, repo: str) -> GitRemote:
    """A provider repository through the workspace's connection; its token travels in a header."""
    from platform_app.services.providers.git_connections import clone_url_for

    return _provider_remote(clone_url_for(workspace=workspace, provider=provider, repo=repo),
                            label=f"{provider}:{repo}")


def _provider_remote(url: str, *, label: str) -> GitRemote:
    # The platform put the token in the URL's userinfo: move it to an Authorization header.
    parts = urlsplit(url)
    credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else (parts.hostname or "")
    bare = urlunsplit((parts.scheme, host + (f":{parts.port}" if parts.port else ""), parts.path, "", ""))
    remote = git_remote_for_url(bare, authorization="Basic " + base64.b64encode(credentials.encode()).decode())
    return GitRemote(url=remote.url, label=label, protocols=remote.protocols, config=remote.config)


def hosted_repo_path(url: str, *, workspace) -> Path | None:
    """The path of a repository the platform hosts for `workspace`, or None when `url` is not one:
    `file://` or a bare path resolving (symlinks followed, no `..`) inside GIT_HOSTED_ROOT/<workspace id>/."""
    url = (url or "").strip()
    if url.startswith("file://"):
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            return None
        raw = unquote(parts.path)
    elif url.startswith("/"):
        raw = url
    else:
        return None
    if ".." in Path(raw).parts:
        return None
    root = (Path(settings.GIT_HOSTED_ROOT) / str(workspace.pk)).resolve()
    path = Path(raw).resolve()
    if root not in path.parents or not path.is_dir():
        return None
    return path


def is_local_url(url: str) -> bool:
    """Whether git would read `url` from this server's disk (file://, a path, anything not scheme://)."""
    url = (url or "").strip()
    return url.startswith(("file:", "/", ".", "~")) or "://" not in url


def git_remote_for_project(project) -> GitRemote:
    """What a build or the scanner clones: the hosted repository, a provider repository, or the project's
    URL through the guard again (its address may have changed since the project was created)."""
    url = clone_url(project)
    if project.git_url and is_local_url(url):
        path = hosted_repo_path(url, workspace=project.workspace)
        if path is None:
            _refuse(url, "local path outside the workspace's hosted repositories")
        label = f"the hosted repository of template `{project.template}`" if project.template else \
            "the hosted repository"
        return GitRemote(url=path.as_uri(), label=label, protocols="file")
    if project.git_url:
        return git_remote_for_url(url)
    return _provider_remote(url, label=f"{project.git_provider}:{project.git_repo}")


def clone_url(project) -> str:
    """The project's repository URL: as stored, or a provider repository's through the workspace's connection
    (the token is never stored on the project). Read it through `git_remote_for_project`, which checks it."""
    if project.git_url:
        return project.git_url
    from platform_app.services.providers.git_connections import clone_url_for

    return clone_url_for(workspace=project.workspace, provider=project.git_provider, repo=project.git_repo)


def public_git_url(project) -> str | None:
    """The `gitUrl` an API answer shows: the user's own URL, never a path on this server."""
    url = project.git_url or ""
    if not url or is_local_url(url):
        return None
    return _without_userinfo(url)


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[1], parts.path, parts.query, parts.fragment))
