"""The git command line, run safely: no shell, a clean environment, a timeout.

Which repositories git may read, and how it is pinned to them, is decided in `git_urls`: functions
reading a repository take a `GitRemote` from there, never a raw URL. Prompts are disabled so an unreadable
repository fails fast; git's own reason goes to the server log, never into an API answer.
"""
import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from config.errors import ValidationFailed
from platform_app.services.providers.git_urls import GitRemote, GitUnreachable

logger = logging.getLogger("platform.git")


@dataclass
class RepoInfo:
    """What `git ls-remote` tells about a repository."""

    default_branch: str | None
    branches: list[str] = field(default_factory=list)
    head_commit: str | None = None


class GitCommandFailed(Exception):
    """A git command failed; the message is git's own reason (last stderr lines), for the log only: it
    may name server paths and addresses."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


def _git_env() -> dict:
    # Only what git needs: no credential helpers from the host, never an interactive prompt.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        # Neither the host's nor the user's git configuration (proxies, insteadOf, helpers) applies.
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        # Local repositories only, unless a GitRemote says otherwise; ext:: and ssh never.
        "GIT_ALLOW_PROTOCOL": "file",
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


def git_ls_remote(remote: GitRemote) -> RepoInfo:
    """Default branch, branches and head commit of a repository (400 `git_unreachable`, git's reason logged)."""
    try:
        out = run_git(["ls-remote", "--symref", "--", remote.url], timeout=settings.GIT_LS_REMOTE_TIMEOUT_SECONDS,
                      extra_env=remote.env)
    except GitCommandFailed as exc:
        logger.warning("git ls-remote of %s failed: %s", remote.label, exc.message)
        raise GitUnreachable()
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


def git_branch_check(info: RepoInfo, branch: str) -> str:
    """`branch` if the repository has it; 400 naming the missing branch otherwise."""
    if not branch or branch.startswith("-") or branch not in info.branches:
        raise ValidationFailed(f"The repository has no branch `{branch}`.", code="git_branch_not_found",
                               details={"branch": ["Unknown branch."]})
    return branch


def git_clone(remote: GitRemote, *, branch: str | None, dest: Path, timeout: int, depth: int | None = 1,
              checkout: bool = True) -> str:
    """Clone `branch` (None: every branch) of `remote` into `dest`, shallow by default; return HEAD's sha.
    Any failure is 400 `git_unreachable`; git's reason goes to the log only."""
    if branch is not None and (not branch or branch.startswith("-")):
        raise ValidationFailed("Not a branch name.", details={"branch": ["Invalid branch."]})
    # Links are checked out as small files holding their target: nothing the platform reads in a clone
    # (detection, the secret scanner) follows one out. The build's archive keeps them (git_archive).
    args = ["-c", "core.symlinks=false", "clone", "--quiet"] + ([] if checkout else ["--no-checkout"])
    if branch is not None:
        args += ["--single-branch", "--branch", branch]
    if depth:
        args += ["--depth", str(depth)]
    try:
        run_git([*args, "--", remote.url, str(dest)], timeout=timeout, extra_env=remote.env)
        return run_git(["rev-parse", "HEAD"], cwd=dest, timeout=timeout).strip()
    except GitCommandFailed as exc:
        logger.warning("git clone of %s failed: %s", remote.label, exc.message)
        raise GitUnreachable()


def git_archive(repo: Path, dest: Path) -> None:
    """HEAD of the checked-out `repo` as a tar.gz at `dest`, from git's objects (links as links, no .git):
    what a builder unpacks."""
    try:
        run_git(["archive", "--format=tar.gz", "-o", str(dest), "HEAD"], cwd=repo)
    except GitCommandFailed as exc:
        logger.warning("git archive of %s failed: %s", repo, exc.message)
        raise GitUnreachable()
