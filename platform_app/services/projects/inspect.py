"""What the new-project page shows before a Git project is created: the repository's branch and detected
framework, read by a shallow clone into a temporary folder (the same guard, clone and detector as builds)."""
import tempfile
from pathlib import Path

from django.conf import settings

from config import ratelimit
from config.errors import ValidationFailed
from platform_app.services.projects.detection import detect
from platform_app.services.providers.git_cli import git_branch_check, git_clone, git_ls_remote
from platform_app.services.providers.git_urls import git_remote_for_url

CLONES_PER_MINUTE = 20


def repository_detect(*, user, url: str = "", remote=None, branch: str | None = None) -> dict:
    """`{framework, runtime, build_command, ..., branch, commit_sha}` of the repository at `url` (or a `remote`
    already made, e.g. a connected provider's) (400 `git_unreachable` for a refused or failing URL; 429 past
    CLONES_PER_MINUTE per user)."""
    ratelimit.consume(f"framework-clone:{user.pk}", CLONES_PER_MINUTE, 60,
                      "Too many repository inspections; try again in a minute.")
    remote = remote or git_remote_for_url((url or "").strip())
    info = git_ls_remote(remote)
    branch = branch or info.default_branch
    if not branch:
        raise ValidationFailed("The repository has no branches.", code="git_unreachable",
                               details={"git_url": ["Empty repository."]})
    git_branch_check(info, branch)
    with tempfile.TemporaryDirectory(prefix="detect-") as tmp:
        dest = Path(tmp) / "repo"
        sha = git_clone(remote, branch=branch, dest=dest, timeout=settings.GIT_TIMEOUT_SECONDS)
        found = detect(dest)
    return found.as_dict() | {"branch": branch, "commit_sha": sha}
