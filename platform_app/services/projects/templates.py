"""Starter templates shipped in `platform_app/starters/` and the platform's own Git hosting.

Creating a project from a template seeds a bare repository under GIT_HOSTED_ROOT with
the starter's files (one commit, fixed author, branch `main`); the project then points
at its `file://` URL and deploys like any other Git project.
"""
import json
import secrets
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.utils.text import slugify

from config.errors import ValidationFailed
from platform_app.services.projects.detection import detect
from platform_app.services.providers.git_cli import run_git

STARTERS_DIR = Path(__file__).resolve().parents[2] / "starters"
# Fixed identity so a seeded repository never depends on the host's git configuration.
SEED_AUTHOR = {"GIT_AUTHOR_NAME": "Platform Starter", "GIT_AUTHOR_EMAIL": "starter@platform.invalid",
               "GIT_COMMITTER_NAME": "Platform Starter", "GIT_COMMITTER_EMAIL": "starter@platform.invalid"}


@lru_cache(maxsize=1)
def _catalog() -> tuple[dict, ...]:
    entries = json.loads((STARTERS_DIR / "catalog.json").read_text())
    result = []
    for entry in entries:
        found = detect(STARTERS_DIR / entry["name"])
        result.append({**entry, "framework": found.framework, "runtime": found.runtime,
                       "build_command": found.build_command, "start_command": found.start_command,
                       "output_directory": found.output_directory})
    return tuple(result)


def templates_list() -> list[dict]:
    """Every shipped starter with what detection finds in it."""
    return [dict(t) for t in _catalog()]


def template_get(name: str) -> dict:
    """One starter by name; 400 naming the known ones otherwise."""
    for entry in _catalog():
        if entry["name"] == name:
            return dict(entry)
    known = ", ".join(t["name"] for t in _catalog())
    raise ValidationFailed(f"Unknown template `{name}` (known: {known}).", details={"template": ["Unknown template."]})


def template_repo_create(*, workspace, template: str, name: str) -> str:
    """Seed a new bare repository with the starter `template`; return its `file://` URL."""
    template_get(template)
    root = Path(settings.GIT_HOSTED_ROOT) / workspace.pk
    root.mkdir(parents=True, exist_ok=True)
    bare = root / f"{slugify(name)[:40] or 'project'}-{secrets.token_hex(4)}.git"
    try:
        run_git(["init", "--quiet", "--bare", "--initial-branch=main", str(bare)])
        with tempfile.TemporaryDirectory(prefix="starter-") as tmp:
            work = Path(tmp) / "work"
            shutil.copytree(STARTERS_DIR / template, work)
            run_git(["init", "--quiet", "--initial-branch=main"], cwd=work)
            run_git(["add", "--all"], cwd=work)
            run_git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", f"Start from the {template} template"],
                    cwd=work, extra_env=SEED_AUTHOR)
            run_git(["push", "--quiet", bare.as_uri(), "main:main"], cwd=work)
    except Exception:
        shutil.rmtree(bare, ignore_errors=True)  # no half-seeded repository left behind
        raise
    return bare.as_uri()
