"""Settings of builds, artifacts and the edge."""
from .base import ALLOWED_HOSTS, DATA_DIR, env
from .celery import CELERY_BEAT_SCHEDULE
from .teams import DEPLOY_DOMAIN

BUILD_ROOT = DATA_DIR / "builds"           # scratch folders, removed after each build
ARTIFACT_ROOT = DATA_DIR / "artifacts"     # one folder per ready deployment
BUILD_TIMEOUT_SECONDS = env.int("BUILD_TIMEOUT_SECONDS", default=900)
BUILD_STUCK_AFTER_SECONDS = env.int("BUILD_STUCK_AFTER_SECONDS", default=1800)
DEPLOY_PORT = env("DEPLOY_PORT", default="8000")  # shown in deployment URLs; empty for port 80
ALLOWED_HOSTS.append(f".{DEPLOY_DOMAIN}")

CELERY_BEAT_SCHEDULE["deployments-reap-stuck"] = {
    "task": "platform_app.tasks.deployments.deployment_reap_stuck", "schedule": 60.0}
EDGE_CACHE_MAX_BYTES = env.int("EDGE_CACHE_MAX_BYTES", default=1024 * 1024)
AGENT_INVITE_TTL_SECONDS = env.int("AGENT_INVITE_TTL_SECONDS", default=3600)
AGENT_HEARTBEAT_TIMEOUT_SECONDS = env.int("AGENT_HEARTBEAT_TIMEOUT_SECONDS", default=30)
CELERY_BEAT_SCHEDULE["agents-expire"] = {"task": "platform_app.tasks.deployments.agents_expire", "schedule": 15.0}
