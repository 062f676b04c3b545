"""Identity provider: RS256 JWTs, sessions, API tokens, brute-force limits."""
from .core import env

JWT_PRIVATE_KEY = env("JWT_PRIVATE_KEY", default="")
JWT_PRIVATE_KEY_FILE = env("JWT_PRIVATE_KEY_FILE", default="")
# PEM public keys still accepted after a key rotation (one per line-separated block).
JWT_EXTRA_PUBLIC_KEYS = env("JWT_EXTRA_PUBLIC_KEYS", default="")
JWT_ISSUER = env("JWT_ISSUER", default="http://localhost:8000")
JWT_ACCESS_TTL_SECONDS = env.int("JWT_ACCESS_TTL_SECONDS", default=900)
# Log-stream tokens (/v1/auth/ws-token) are short-lived and checked against their credential on every use; an open
# stream checks its credential and membership again every LOG_STREAM_RECHECK_SECONDS and ends when either is gone.
JWT_STREAM_TTL_SECONDS = env.int("JWT_STREAM_TTL_SECONDS", default=60)
LOG_STREAM_RECHECK_SECONDS = env.float("LOG_STREAM_RECHECK_SECONDS", default=30.0)
# Email verification links (docs/auth.md): how long a link works, how many a user may ask for an hour.
EMAIL_VERIFICATION_TTL_HOURS = env.int("EMAIL_VERIFICATION_TTL_HOURS", default=72)
EMAIL_VERIFICATION_SENDS_PER_HOUR = env.int("EMAIL_VERIFICATION_SENDS_PER_HOUR", default=5)
REFRESH_TOKEN_TTL_DAYS = env.int("REFRESH_TOKEN_TTL_DAYS", default=30)
API_TOKEN_MAX_DAYS = env.int("API_TOKEN_MAX_DAYS", default=366)
# Device authorization (`svc login`, RFC 8628): how long a code waits for approval, how often the device may poll,
# how long the token it receives lasts.
DEVICE_CODE_TTL_SECONDS = env.int("DEVICE_CODE_TTL_SECONDS", default=900)
DEVICE_POLL_INTERVAL_SECONDS = env.int("DEVICE_POLL_INTERVAL_SECONDS", default=5)
DEVICE_TOKEN_DAYS = env.int("DEVICE_TOKEN_DAYS", default=90)

# Sign-in and MFA brute-force limits (docs/auth.md), counted in the database per window:
# per (account, client address) a hard limit; per account a ceiling past which attempts are slowed with
# doubling delays (never refused outright, so strangers cannot lock an owner out); per address a hard
# ceiling across accounts (credential stuffing).
AUTH_FAILURES_PER_ACCOUNT_AND_IP = env.int("AUTH_FAILURES_PER_ACCOUNT_AND_IP", default=5)
AUTH_FAILURES_PER_ACCOUNT = env.int("AUTH_FAILURES_PER_ACCOUNT", default=50)
AUTH_FAILURES_PER_IP = env.int("AUTH_FAILURES_PER_IP", default=20)
AUTH_FAILURE_WINDOW_SECONDS = env.int("AUTH_FAILURE_WINDOW_SECONDS", default=900)
AUTH_SLOWDOWN_BASE_SECONDS = env.float("AUTH_SLOWDOWN_BASE_SECONDS", default=2.0)
AUTH_SLOWDOWN_MAX_SECONDS = env.float("AUTH_SLOWDOWN_MAX_SECONDS", default=300.0)
IDENTITY_BEAT = {
    "attempt-counters-sweep": {"task": "platform_app.tasks.identity.attempt_counters_prune", "schedule": 3600.0},
    "device-authorizations-purge": {"task": "platform_app.tasks.identity.device_authorizations_purge",
                                    "schedule": 3600.0},
}
# Proxies in front of the application that append to X-Forwarded-For; 0 = use the connection's address.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
OTP_TOTP_ISSUER = env("OTP_TOTP_ISSUER", default="Platform")
