"""Tests: fast hashing, eager tasks, in-memory cache and mail."""
from .base import *  # noqa: F401,F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
OTP_DRAIN_LINGER_SECONDS = 0  # a drain runs inline after each send: no waiting for more to gather
OTP_DRAIN_WAKE_GRACE_SECONDS = 0  # nor for a send that saw it running (tests/otp_app/test_drain.py sets one)
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Volume limits count in that cache (one process: its lock makes incr atomic), whether or not REDIS_URL is set, so
# a test costs the same queries everywhere; tests/test_ratelimit_atomic.py runs the database store.
RATELIMIT_STORE = "cache"
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Tests reach their own local servers (Git over HTTP, pytest-httpserver) on loopback, over plain http.
OUTBOUND_ALLOW_HTTP = True
OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
# Names resolve only through a DNS server a test starts; nothing ever asks an outside resolver.
OUTBOUND_DNS_SERVERS = ["127.0.0.1:9"]
# Builds run in the build task itself (a builder process in tests/platform_app/deployments/test_builders.py),
# sandboxed where bubblewrap works (CI installs it), unsandboxed elsewhere. Sandboxes reach no private network.
BUILD_INLINE = True
SANDBOX_ALLOW_NONE = True
SANDBOX_EGRESS_ALLOWED_NETWORKS = []

# Static files from the apps' folders, as in development (no collectstatic before the suite).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # The test database in a file, not Django's default shared-cache memory database: there a thread that meets
    # another thread's table lock fails at once ("database table is locked"), where a file waits for the lock
    # (base settings' timeout), as the embedded default does for web, worker and beat. Not in WAL mode: Django
    # deletes the file after the run but not a write-ahead log a thread's connection left open, which a new file
    # of the same name would then replay.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}  # noqa: F405
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA synchronous=OFF;"  # noqa: F405
