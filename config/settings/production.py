"""Production: every secret from the environment, HTTPS only."""
from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F401,F403
from .base import env
from .deployments import with_edge_hosts

DEBUG = False
SECRET_KEY = env("DJANGO_SECRET_KEY")
# The platform's own names, and every project's `<slug>.DEPLOY_DOMAIN` for the edge.
ALLOWED_HOSTS = with_edge_hosts(env.list("DJANGO_ALLOWED_HOSTS"))
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
# WhiteNoise (in base MIDDLEWARE) serves what `collectstatic` gathered, compressed and with hashed names.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    "artifacts": ARTIFACT_STORAGE,  # noqa: F405
}
if BUILD_INLINE:  # noqa: F405
    raise ImproperlyConfigured("BUILD_INLINE runs strangers' builds in the process that holds the platform's "
                               "secrets; production builds run on builders (docs/isolation.md).")

# Volume limits (sends, the firewall's rate_limit rules, ...) must count atomically across processes: a counter
# that reads, then writes lets parallel requests past the limit (config/ratelimit.py).
if RATELIMIT_STORE not in ("cache", "database"):  # noqa: F405
    raise ImproperlyConfigured(f"RATELIMIT_STORE must be 'cache' (on Redis) or 'database', not {RATELIMIT_STORE!r}.")  # noqa: F405
if RATELIMIT_STORE == "cache" and not REDIS_URL:  # noqa: F405
    raise ImproperlyConfigured("RATELIMIT_STORE=cache counts in the cache, which is atomic only on Redis: set "
                               "REDIS_URL, or RATELIMIT_STORE=database.")
