"""Settings of workspaces, invitations, projects, templates and the platform's own Git hosting."""
from pathlib import Path

from .base import DATA_DIR, SITE_URL, env

# An invitation link works for this many days, once.
INVITATION_TTL_DAYS = env.int("INVITATION_TTL_DAYS", default=7)
# Base of the accept link put in invitation emails (the dashboard's origin).
INVITATION_LINK_BASE = env("INVITATION_LINK_BASE", default=SITE_URL)
# Bare Git repositories the platform hosts itself (projects created from templates).
GIT_HOSTED_ROOT = Path(env("GIT_HOSTED_ROOT", default=str(DATA_DIR / "git"))).resolve()
# Every git CLI call (ls-remote, clone, push) gives up after this many seconds.
GIT_TIMEOUT_SECONDS = env.int("GIT_TIMEOUT_SECONDS", default=60)
# Whether users may point projects and detection at repositories on this server (file:// URLs, local paths).
# Handy in development and tests; a multi-tenant production should set it to false.
GIT_ALLOW_LOCAL_URLS = env.bool("GIT_ALLOW_LOCAL_URLS", default=True)
DEPLOY_DOMAIN = env("DEPLOY_DOMAIN", default="localhost")
