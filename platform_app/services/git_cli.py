"""The git command line, run safely: no shell, a clean environment, a timeout.

Any URL the git CLI accepts works (https, ssh, file://). Prompts are disabled so an
unreadable repository fails fast with git's own reason instead of hanging.
"""
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from config.errors import ApplicationError, ValidationFailed


@dataclass
class RepoInfo:
    """What `git ls-remote` tells about a repository."""

    default_branch: str | None
    branches: list[str] = field(default_factory=list)
    head_commit: str | None = None


class GitCommandFailed(ApplicationError):
    """A git command failed; the message is git's own reason (last stderr lines)."""

    status, code = 400, "git_failed"


def _git_env() -> dict:
    # Only what git needs: no credential helpers from the host, never an interactive prompt.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new",
        "GIT_CONFIG_NOSYSTEM": "1",
        # ext:: runs arbitrary commands; never allow it whatever the URL says.
        "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",
        "LC_ALL": "C",
    }


def _reason(stderr: str) -> str:
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    # git's reason starts at its first fatal/error line; progress chatter before it is noise.
    start = next((i for i, line in enumerate(lines) if line.startswith(("fatal:", "error:"))), max(len(lines) - 3, 0))
    return " ".join(lines[start:start + 4])[:500] or "git failed without a message"


def run_git(args: list[str], *, cwd: Path | None = None, timeout: int | None = None,
            extra_env: dict | None = None) -> str:
    """Run `git <args>` and return stdout; raise GitCommandFailed with git's reason."""
    env = _git_env() | (extra_env or {})
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout or settings.GIT_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise GitCommandFailed(f"git {args[0]} timed out after {timeout or settings.GIT_TIMEOUT_SECONDS}s.")
    if done.returncode != 0:
        raise GitCommandFailed(_reason(done.stderr))
    return done.stdout


def _check_url(url: str) -> str:
    url = (url or "").strip()
    # An argument starting with "-" would be read by git as an option.
    if not url or url.startswith("-") or any(c in url for c in "\n\r\0"):
        raise ValidationFailed("Not a repository URL.", code="git_unreachable", details={"url": ["Invalid URL."]})
    return url


def user_url_check(url: str) -> str:
    """A repository URL given by a user: refuses local repositories unless GIT_ALLOW_LOCAL_URLS."""
    url = _check_url(url)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    # No scheme and no scp-style "host:path" means a path on this server.
    is_local = scheme == "file" or (not scheme and (":" not in url.split("/", 1)[0]))
    if scheme in ("ext", "fd"):
        raise ValidationFailed("This kind of repository URL is not allowed.", code="git_unreachable",
                               details={"url": ["Unsupported transport."]})
    if is_local and not settings.GIT_ALLOW_LOCAL_URLS:
        raise ValidationFailed("Repositories on the platform's own disk cannot be used here.",
                               code="git_unreachable", details={"url": ["Local repositories are not allowed."]})
    return url


def git_ls_remote(url: str) -> RepoInfo:
    """Default branch, branches and head commit of a remote repository (400 `git_unreachable`)."""
    url = _check_url(url)
    try:
        out = run_git(["ls-remote", "--symref", "--", url])
    except GitCommandFailed as exc:
        raise ValidationFailed(f"git cannot read this repository: {exc.message}", code="git_unreachable",
                               details={"url": [exc.message]})
    default_branch, branches, refs = None, [], {}
    for line in out.splitlines():
        left, _, ref = line.partition("\t")
        if left.startswith("ref: ") and ref == "HEAD":
            default_branch = left[5:].removeprefix("refs/heads/")
        elif ref.startswith("refs/heads/"):
            branches.append(ref.removeprefix("refs/heads/"))
            refs[ref] = left
        elif ref == "HEAD":
            refs["HEAD"] = left
    if default_branch is None and branches:
        default_branch = "main" if "main" in branches else branches[0]
    head = refs.get("HEAD") or (refs.get(f"refs/heads/{default_branch}") if default_branch else None)
    return RepoInfo(default_branch=default_branch, branches=sorted(branches), head_commit=head)


def git_clone(url: str, *, branch: str, dest: Path, timeout: int, depth: int | None = 1) -> str:
    """Clone `branch` of `url` into `dest` (shallow by default); return the checked-out commit sha."""
    url = _check_url(url)
    if not branch or branch.startswith("-"):
        raise ValidationFailed("Not a branch name.", details={"branch": ["Invalid branch."]})
    args = ["clone", "--quiet", "--single-branch", "--branch", branch]
    if depth:
        args += ["--depth", str(depth)]
    run_git([*args, "--", url, str(dest)], timeout=timeout)
    return run_git(["rev-parse", "HEAD"], cwd=dest, timeout=timeout).strip()
