"""Settings shared by every environment. Read the environment only through `env`.

The area modules (api, celery, identity, ...) declare their own values, importing plain ones from `core`;
this module assembles them at its end, in one place (docs/architecture.md, "Dependency rule")."""
from .core import *  # noqa: F401,F403 - BASE_DIR, env, DATA_DIR, SECRET_KEY, SITE_URL, REDIS_URL
from .core import BASE_DIR, DATA_DIR, REDIS_URL, env

# GENERAL
# ------------------------------------------------------------------------------
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", ".localhost", "127.0.0.1", "[::1]", "testserver"])
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True
# Baseline views under /bench/ (config/bench_views.py) for bench/harness.py; never on in a deployment.
BENCH_VIEWS = env.bool("BENCH_VIEWS", default=False)

# DATABASES
# ------------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "config.postgresql"  # Django's, checking a pooled connection without a round trip
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # web, worker and beat share one file: wait for locks instead of failing,
    # and take the write lock at BEGIN so two writers never deadlock.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
# Connections outlive a request (docs/performance.md): PostgreSQL's come from psycopg's pool, and the backend
# looks at each it borrows (config/postgresql/base.py), so one that broke while idle is replaced unseen.
# CONN_MAX_AGE serves the pool-less setups (WSGI, SQLite). Behind PgBouncer in transaction mode:
# DATABASE_POOL=false DATABASE_CONN_MAX_AGE=0 DATABASE_DISABLE_SERVER_SIDE_CURSORS=true.
if DATABASES["default"]["ENGINE"] == "config.postgresql" and env.bool("DATABASE_POOL", default=True):
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool owns the connections
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False  # the backend looks at each one it borrows instead
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN_SIZE", default=2),
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=10),
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=10.0),  # seconds to wait for a free connection
    }
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool("DATABASE_DISABLE_SERVER_SIDE_CURSORS", default=False)
if DATABASES["default"]["ENGINE"] == "config.postgresql":
    # An unreachable server fails a connection attempt in seconds, not after the OS's TCP timeout (libpq's
    # minimum is 2). /health gives the database HEALTH_DATABASE_TIMEOUT_SECONDS before answering 503.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT", default=3))
    # Parameters travel apart from the statement text (psycopg's server-side binding) instead of being quoted into
    # it in Python (a send's CPU 7.6 -> 6.3 ms across the machine), and a statement a connection runs again and
    # again is parsed and planned once: psycopg prepares it at its DATABASE_PREPARE_THRESHOLD-th run (Django
    # turns that off unless asked). docs/performance.md, "Database connections". Both on with the pool; off behind
    # PgBouncer in transaction mode (DATABASE_POOL=false), where a prepared statement would be looked for on
    # another server connection.
    DATABASES["default"]["OPTIONS"]["server_side_binding"] = env.bool(
        "DATABASE_SERVER_SIDE_BINDING", default=env.bool("DATABASE_POOL", default=True))
    if DATABASES["default"]["OPTIONS"]["server_side_binding"]:
        DATABASES["default"]["OPTIONS"]["prepare_threshold"] = env.int("DATABASE_PREPARE_THRESHOLD", default=5)
HEALTH_DATABASE_TIMEOUT_SECONDS = env.float("HEALTH_DATABASE_TIMEOUT_SECONDS", default=1.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# CACHES (volume rate limits, edge responses; sign-in attempt counters live in the database)
# ------------------------------------------------------------------------------
# REDIS_URL (config/settings/core.py): the cache, the broker and the log stream's pub/sub when set.
# Short socket timeouts: an unreachable Redis costs a request a fraction of a second, and the rate limits
# then fail open (config/ratelimit.py) instead of hanging.
REDIS_CACHE_TIMEOUT_SECONDS = env.float("REDIS_CACHE_TIMEOUT_SECONDS", default=0.5)
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          # one pool per process: Django makes a cache object per request under ASGI
                          "OPTIONS": {"pool_class": "config.redis_pool.SharedConnectionPool",
                                      "socket_connect_timeout": REDIS_CACHE_TIMEOUT_SECONDS,
                                      "socket_timeout": REDIS_CACHE_TIMEOUT_SECONDS}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(DATA_DIR / "cache")}}
# Where config/ratelimit.py counts volume limits: "cache" (one INCR per window; atomic on Redis only) or "database"
# (one upsert per send, config/counters; atomic on SQLite and PostgreSQL). Production refuses "cache" off Redis.
RATELIMIT_STORE = env("RATELIMIT_STORE", default="cache" if REDIS_URL else "database")
# Answers the web server sends without entering Django while the data behind them holds (config/kept_answers.py):
# at most this many bytes per process, each at most this many seconds.
KEPT_ANSWERS_BYTES = env.int("KEPT_ANSWERS_BYTES", default=2 * 1024 * 1024)
KEPT_ANSWERS_TTL_SECONDS = env.float("KEPT_ANSWERS_TTL_SECONDS", default=300.0)

# APPS
# ------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc as static files: the docs need no CDN
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_htmx",  # request.htmx: pages answer htmx requests with a fragment, plain requests with the page
    "platform_app",
    "otp_app",
    "warehouse_app",
    "config.counters",
]
AUTH_USER_MODEL = "platform_app.User"

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.RequestGuardMiddleware",  # NUL bytes, body limits: before any lookup, the edge's too
    "django.contrib.sessions.middleware.SessionMiddleware",
    "platform_app.edge.EdgeMiddleware",
    "config.security.SecurityHeadersMiddleware",  # after the edge: user deployments keep their own headers
    # Static files in every environment (gunicorn has no static handler); after the edge, so deployed sites
    # keep their own /static/ paths. Development and tests serve the apps' folders directly (local.py, test.py).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.middleware.LazyMessageMiddleware",  # Django's, opened only where a message is read or added
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ApplicationErrorMiddleware",
]
CSRF_FAILURE_VIEW = "config.errors.csrf_failure"  # the service's JSON error under API prefixes
SESSION_ENGINE = "config.sessions"  # Django's database sessions, read by hand-written SQL

# Request bodies (docs/architecture.md, "Input limits"): 1 MiB, read by Django and by the JSON parser alike;
# the few routes that need more are named in REQUEST_BODY_LIMITS (settings/api.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=1024 * 1024)

# Security headers (docs/settings.md): config/security.py sends the policy, Django the rest. Scripts come
# only from this site (no inline script anywhere, the docs' init script included); styles allow 'unsafe-inline'
# for the docs pages' <style> blocks and style attributes; Swagger UI and ReDoc need data: images and a blob:
# worker. No form-action: OAuth consent forms end in a redirect to the client's own site.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    "font-src 'self' data:", "connect-src 'self'", "worker-src 'self' blob:", "object-src 'none'",
    "base-uri 'self'", "frame-ancestors 'none'",
])
CONTENT_SECURITY_POLICY_API = "default-src 'none'; frame-ancestors 'none'"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "strict-origin-when-cross-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = None  # sent by config/security.py, so never on the edge's responses
X_FRAME_OPTIONS = "DENY"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.kept_pages.csrf_slot",  # after Django's csrf, which it stands in for
            ]
        },
    }
]

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "/media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# PASSWORDS
# ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/dashboard/login/"

# EMAIL
# ------------------------------------------------------------------------------
EMAIL_BACKEND = env("DJANGO_EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="no-reply@localhost")

# LOGGING
# ------------------------------------------------------------------------------
# Tokens in query strings and secret path segments (deploy hooks, invitations) never reach a log line: Django logs
# every 4xx/5xx with its path ("Method Not Allowed: /v1/hooks/deploy/<secret>") on `django.request`; the filter
# rewrites such records there (before any handler sees them) and on the console handler (config/log_redaction.py).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact_secrets": {"()": "config.log_redaction.RedactSecrets"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact_secrets"]}},
    "loggers": {"django.request": {"filters": ["redact_secrets"]}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", default="INFO")},
}

from .api import *  # noqa: E402,F401,F403
from .celery import *  # noqa: E402,F401,F403
from .identity import *  # noqa: E402,F401,F403
from .teams import *  # noqa: E402,F401,F403
from .providers import *  # noqa: E402,F401,F403
from .outbound import *  # noqa: E402,F401,F403
from .deployments import *  # noqa: E402,F401,F403
from .envvars import *  # noqa: E402,F401,F403
from .otp import *  # noqa: E402,F401,F403
from .warehouse import *  # noqa: E402,F401,F403
from .warehouse_commerce import *  # noqa: E402,F401,F403
from .domains import *  # noqa: E402,F401,F403
from .edge import *  # noqa: E402,F401,F403
from .automation import *  # noqa: E402,F401,F403
from .sandbox import *  # noqa: E402,F401,F403
from .addons import *  # noqa: E402,F401,F403
from .components import *  # noqa: E402,F401,F403
from .buckets import *  # noqa: E402,F401,F403
from .dedicated_dbs import *  # noqa: E402,F401,F403
from .tunnels import *  # noqa: E402,F401,F403
from .graduation import *  # noqa: E402,F401,F403
from .billing import *  # noqa: E402,F401,F403
from .org import *  # noqa: E402,F401,F403
from .staff import *  # noqa: E402,F401,F403
from .mcp import *  # noqa: E402,F401,F403

# Assembled from the areas above: the whole beat schedule in one place, and the edge's host names.
CELERY_BEAT_SCHEDULE = {**IDENTITY_BEAT, **DEPLOYMENTS_BEAT, **OTP_BEAT,  # noqa: F405
                        **DOMAINS_BEAT, **EDGE_BEAT, **AUTOMATION_BEAT,  # noqa: F405
                        **ADDONS_BEAT, **BUCKETS_BEAT, **DEDICATED_DBS_BEAT, **TUNNELS_BEAT,  # noqa: F405
                        **GRADUATION_BEAT, **BILLING_BEAT, **ORG_BEAT, **STAFF_BEAT, **MCP_BEAT,  # noqa: F405
                        "ratelimit-counters-sweep": {"task": "config.counters.tasks.counters_prune",
                                                     "schedule": 3600.0}}
# WebSocket routes of config/asgi.py (path → dotted path of an ASGI callable), from the areas that have one.
WEBSOCKET_ROUTES = {**TUNNELS_WEBSOCKETS}  # noqa: F405
ALLOWED_HOSTS = with_edge_hosts(ALLOWED_HOSTS)  # noqa: F405
STORAGES["artifacts"] = ARTIFACT_STORAGE  # noqa: F405
