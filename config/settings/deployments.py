"""Settings of builds, artifacts and the edge."""
from .core import DATA_DIR, env
from .teams import DEPLOY_DOMAIN

BUILD_ROOT = DATA_DIR / "builds"           # scratch folders, removed after each build
ARTIFACT_ROOT = DATA_DIR / "artifacts"     # one folder per ready deployment
BUILD_TIMEOUT_SECONDS = env.int("BUILD_TIMEOUT_SECONDS", default=900)
BUILD_STUCK_AFTER_SECONDS = env.int("BUILD_STUCK_AFTER_SECONDS", default=1800)
# A running build renews a lease in the cache; the reaper ends a build whose lease is older than this (its
# worker died). A queued deployment older than BUILD_REQUEUE_AFTER_SECONDS is enqueued again (its job may never
# have reached the broker). Both sweeps run every BUILD_REAP_INTERVAL_SECONDS.
BUILD_LEASE_SECONDS = env.float("BUILD_LEASE_SECONDS", default=30.0)
BUILD_REQUEUE_AFTER_SECONDS = env.float("BUILD_REQUEUE_AFTER_SECONDS", default=60.0)
BUILD_REAP_INTERVAL_SECONDS = env.float("BUILD_REAP_INTERVAL_SECONDS", default=30.0)
# Deployment addresses (platform_app/services/projects/addresses.py): `DEPLOY_SCHEME://<project>.DEPLOY_DOMAIN:DEPLOY_PORT/`,
# the port left out when empty or the scheme's default. `https` where the platform sits behind TLS.
DEPLOY_SCHEME = env("DEPLOY_SCHEME", default="http")
DEPLOY_PORT = env("DEPLOY_PORT", default="8000")


def with_edge_hosts(hosts: list[str]) -> list[str]:
    """The platform's own host names plus `<anything>.DEPLOY_DOMAIN`, which the edge serves (base.py and
    production.py apply it to ALLOWED_HOSTS)."""
    edge = f".{DEPLOY_DOMAIN}"
    return [*hosts, edge] if edge not in hosts else list(hosts)


# A deploy hook queues at most one build at a time: a call while the hook's last build is still queued is 429
# with this Retry-After (that build will build the branch as it is when it starts anyway).
DEPLOY_HOOK_RETRY_AFTER_SECONDS = env.int("DEPLOY_HOOK_RETRY_AFTER_SECONDS", default=30)
EDGE_CACHE_MAX_BYTES = env.int("EDGE_CACHE_MAX_BYTES", default=1024 * 1024)
AGENT_INVITE_TTL_SECONDS = env.int("AGENT_INVITE_TTL_SECONDS", default=3600)
AGENT_HEARTBEAT_TIMEOUT_SECONDS = env.int("AGENT_HEARTBEAT_TIMEOUT_SECONDS", default=30)

# A finished build's log moves to artifact storage this long after (log drains have sent it by then), a batch of
# LOG_ARCHIVE_BATCH a run; LOG_RETENTION_DAYS (0: forever) after its build, it is deleted (docs/deployments.md).
LOG_ARCHIVE_AFTER_MINUTES = env.int("LOG_ARCHIVE_AFTER_MINUTES", default=10)
LOG_ARCHIVE_BATCH = env.int("LOG_ARCHIVE_BATCH", default=50)  # about 0.7 s a run at the scale set
LOG_RETENTION_DAYS = env.int("LOG_RETENTION_DAYS", default=0)
# How often a worker process wakes its open streams a second, together, at most (each wake-up is a write): past a
# thousand streams a process batches lines into fewer writes (docs/deployment.md, Log streams). 0: no batching.
STREAM_WAKES_PER_SECOND = env.int("STREAM_WAKES_PER_SECOND", default=20000)
# Event streams (build logs, the MCP server stream) one user, whatever their credential, may hold open on one web
# process: each holds memory and a socket, and a user's streams must not fill a worker. More are refused (429
# too_many_streams; config/event_streams.py).
EVENT_STREAMS_PER_USER = env.int("EVENT_STREAMS_PER_USER", default=100)

DEPLOYMENTS_BEAT = {
    "deployments-reap-stuck": {"task": "platform_app.tasks.deployments.deployments_reap_stuck",
                               "schedule": BUILD_REAP_INTERVAL_SECONDS},
    "deployments-requeue-stale": {"task": "platform_app.tasks.deployments.deployments_requeue_stale",
                                  "schedule": BUILD_REAP_INTERVAL_SECONDS},
    "agents-expire": {"task": "platform_app.tasks.agents.agents_expire", "schedule": 15.0},
    "deployment-logs-archive": {"task": "platform_app.tasks.deployments.deployment_logs_archive", "schedule": 60.0},
}
