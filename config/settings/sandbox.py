"""Where strangers' code runs (docs/isolation.md): the sandbox of builds and instances, their limits, and the
storage of artifacts that builders upload and nodes download."""
from .core import DATA_DIR, env

# The runner: `auto` (bubblewrap where it works), `bubblewrap`, or `none`. Without a sandbox a builder or an
# agent refuses to start unless SANDBOX_ALLOW_NONE (local and test settings allow it, saying so in every log).
SANDBOX_RUNNER = env("SANDBOX_RUNNER", default="auto")
SANDBOX_ALLOW_NONE = env.bool("SANDBOX_ALLOW_NONE", default=False)
# Who a sandbox's processes are outside it when the node runs as root.
SANDBOX_HOST_UID = env.int("SANDBOX_HOST_UID", default=65534)
SANDBOX_HOST_GID = env.int("SANDBOX_HOST_GID", default=65534)
# Read-only paths added to every sandbox besides /usr (a language runtime under /opt).
SANDBOX_READONLY_PATHS = env.list("SANDBOX_READONLY_PATHS", default=[])
SANDBOX_CGROUP_PARENT = env("SANDBOX_CGROUP_PARENT", default="platform-sandbox")
# Private networks a sandbox's egress may reach (an internal package mirror); everything else private,
# loopback, link-local or metadata is refused, whatever OUTBOUND_ALLOWED_NETWORKS opens for the platform itself.
SANDBOX_EGRESS_ALLOWED_NETWORKS = env.list("SANDBOX_EGRESS_ALLOWED_NETWORKS", default=[])
# The largest command a Redis add-on's guard reads before relaying it; past it the connection closes. The node
# holds each command whole, so this is per connection and small (Redis's own limit is 512 MB).
SANDBOX_GUARD_MAX_COMMAND_BYTES = env.int("SANDBOX_GUARD_MAX_COMMAND_BYTES", default=4 * 1024 * 1024)

# Builds run on builders (platform_app/nodes), which claim them over the API. BUILD_INLINE runs them in the
# process of the build task instead (the test suite; production refuses it).
BUILD_INLINE = env.bool("BUILD_INLINE", default=False)
BUILD_MEMORY_MB = env.int("BUILD_MEMORY_MB", default=2048)
BUILD_CPU_SECONDS = env.int("BUILD_CPU_SECONDS", default=1800)
BUILD_PROCESSES = env.int("BUILD_PROCESSES", default=512)
BUILD_DISK_MB = env.int("BUILD_DISK_MB", default=4096)
# A build no builder took within this long ends `error` (is a builder running?).
BUILD_CLAIM_TIMEOUT_SECONDS = env.int("BUILD_CLAIM_TIMEOUT_SECONDS", default=300)
# claims of one builder node that may wait at a time (a node's token is the tenant's; each wait holds a web thread)
BUILD_CLAIM_WAITS_PER_NODE = env.int("BUILD_CLAIM_WAITS_PER_NODE", default=4)
# Each running instance (instance sizes, when they exist, set their own).
INSTANCE_MEMORY_MB = env.int("INSTANCE_MEMORY_MB", default=512)
INSTANCE_PROCESSES = env.int("INSTANCE_PROCESSES", default=256)
INSTANCE_DISK_MB = env.int("INSTANCE_DISK_MB", default=2048)
INSTANCE_CPU_SHARE = env.float("INSTANCE_CPU_SHARE", default=1.0)

# ARTIFACTS
# ------------------------------------------------------------------------------
# What a build may output, and its source archive.
ARTIFACT_MAX_BYTES = env.int("ARTIFACT_MAX_BYTES", default=512 * 1024 * 1024)
ARTIFACT_MAX_FILES = env.int("ARTIFACT_MAX_FILES", default=50_000)
# A folder sent by the command-line client (`POST P/sources`): its tar.gz, and the files in it. Unpacked it is
# bounded like an output (ARTIFACT_MAX_BYTES).
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=100 * 1024 * 1024)
UPLOAD_MAX_FILES = env.int("UPLOAD_MAX_FILES", default=20_000)
# Archives (sources, outputs) are kept through Django's storage API: the filesystem by default, an
# S3-compatible bucket when ARTIFACTS_S3_BUCKET is set; nodes download them by their token or a presigned URL.
ARTIFACTS_S3_BUCKET = env("ARTIFACTS_S3_BUCKET", default="")
if ARTIFACTS_S3_BUCKET:
    ARTIFACT_STORAGE = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": ARTIFACTS_S3_BUCKET,
        "endpoint_url": env("ARTIFACTS_S3_ENDPOINT_URL", default="") or None,
        "access_key": env("ARTIFACTS_S3_ACCESS_KEY_ID", default="") or None,
        "secret_key": env("ARTIFACTS_S3_SECRET_ACCESS_KEY", default="") or None,
        "region_name": env("ARTIFACTS_S3_REGION", default="us-east-1"),
        "querystring_auth": True,
        "signature_version": "s3v4",
        "querystring_expire": env.int("ARTIFACTS_S3_URL_SECONDS", default=300),
        "file_overwrite": True,
        "default_acl": None,
    }}
else:
    ARTIFACT_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage",
                        "OPTIONS": {"location": str(DATA_DIR / "artifact-store")}}

# IMAGES
# ------------------------------------------------------------------------------
# OCI images run by nodes with their root filesystem as `/` in the sandbox (docs/images.md). An image is refused
# past IMAGE_MAX_BYTES, compressed (its layers as the registry sends them) and again unpacked, or past
# IMAGE_MAX_LAYERS layers. Each node keeps blobs and unpacked roots in its data folder up to
# IMAGE_CACHE_MAX_BYTES, the least recently used going first. All three are handed to nodes in assignments.
IMAGE_MAX_BYTES = env.int("IMAGE_MAX_BYTES", default=2 * 1024 ** 3)
IMAGE_MAX_LAYERS = env.int("IMAGE_MAX_LAYERS", default=128)
IMAGE_CACHE_MAX_BYTES = env.int("IMAGE_CACHE_MAX_BYTES", default=20 * 1024 ** 3)
