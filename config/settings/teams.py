"""Settings of workspaces, invitations, projects, templates and the platform's own Git hosting."""
from pathlib import Path

from .core import DATA_DIR, SITE_URL, env

# An invitation link works for this many days, once.
INVITATION_TTL_DAYS = env.int("INVITATION_TTL_DAYS", default=7)
# Base of the accept link put in invitation emails (the dashboard's origin).
INVITATION_LINK_BASE = env("INVITATION_LINK_BASE", default=SITE_URL)
# Bare Git repositories the platform hosts itself (projects created from templates).
GIT_HOSTED_ROOT = Path(env("GIT_HOSTED_ROOT", default=str(DATA_DIR / "git"))).resolve()
# Every other git CLI call (clone, push) gives up after this many seconds.
GIT_TIMEOUT_SECONDS = env.int("GIT_TIMEOUT_SECONDS", default=60)
# Reading a repository's branches (project creation, detection) gives up sooner.
GIT_LS_REMOTE_TIMEOUT_SECONDS = env.int("GIT_LS_REMOTE_TIMEOUT_SECONDS", default=20)
# A transfer slower than this many bytes per second for this many seconds is abandoned (never hangs).
GIT_LOW_SPEED_LIMIT_BYTES = env.int("GIT_LOW_SPEED_LIMIT_BYTES", default=1000)
GIT_LOW_SPEED_TIME_SECONDS = env.int("GIT_LOW_SPEED_TIME_SECONDS", default=15)
DEPLOY_DOMAIN = env("DEPLOY_DOMAIN", default="localhost")
