"""Fixtures of the teams area: real Git repositories made with the git CLI in a temp folder."""
import os
import subprocess
from pathlib import Path

import pytest

GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_NAME": "Test",
           "GIT_COMMITTER_EMAIL": "test@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args, cwd=None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(autouse=True)
def hosted_git_root(settings, tmp_path):
    """Template repositories go to a per-test folder, never to the real data folder."""
    settings.GIT_HOSTED_ROOT = tmp_path / "hosted"
    return settings.GIT_HOSTED_ROOT


@pytest.fixture
def make_repo(tmp_path):
    """`make_repo({"path": "content"}, branches=("dev",), default="main")` → file:// URL of a bare repository."""
    counter = iter(range(1000))

    def make(files: dict, *, default: str = "main", branches=()) -> str:
        n = next(counter)
        work, bare = tmp_path / f"work{n}", tmp_path / f"repo{n}.git"
        work.mkdir()
        for rel, content in files.items():
            path = work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        git("init", "--quiet", f"--initial-branch={default}", cwd=work)
        git("add", "--all", cwd=work)
        git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "initial", cwd=work)
        for branch in branches:
            git("branch", branch, cwd=work)
        git("clone", "--quiet", "--bare", str(work), str(bare))
        return Path(bare).as_uri()

    return make
