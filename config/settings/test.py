"""Tests: fast hashing, eager tasks, in-memory cache and mail."""
from .base import *  # noqa: F401,F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
OTP_DRAIN_LINGER_SECONDS = 0  # a drain runs inline after each send: no waiting for more to gather
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Tests reach their own local servers (Git over HTTP, pytest-httpserver) on loopback, over plain http.
OUTBOUND_ALLOW_HTTP = True
OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
# Names resolve only through a DNS server a test starts; nothing ever asks an outside resolver.
OUTBOUND_DNS_SERVERS = ["127.0.0.1:9"]

# Static files from the apps' folders, as in development (no collectstatic before the suite).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
