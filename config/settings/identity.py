"""Identity provider: RS256 JWTs, sessions, API tokens, brute-force limits."""
from .base import env

JWT_PRIVATE_KEY = env("JWT_PRIVATE_KEY", default="")
JWT_PRIVATE_KEY_FILE = env("JWT_PRIVATE_KEY_FILE", default="")
# PEM public keys still accepted after a key rotation (one per line-separated block).
JWT_EXTRA_PUBLIC_KEYS = env("JWT_EXTRA_PUBLIC_KEYS", default="")
JWT_ISSUER = env("JWT_ISSUER", default="http://localhost:8000")
JWT_ACCESS_TTL_SECONDS = env.int("JWT_ACCESS_TTL_SECONDS", default=900)
JWT_STREAM_TTL_SECONDS = env.int("JWT_STREAM_TTL_SECONDS", default=120)
REFRESH_TOKEN_TTL_DAYS = env.int("REFRESH_TOKEN_TTL_DAYS", default=30)
API_TOKEN_MAX_DAYS = env.int("API_TOKEN_MAX_DAYS", default=366)

# Sign-in and MFA brute-force limits: failures per window, per account and per client IP.
AUTH_FAILURES_PER_ACCOUNT = env.int("AUTH_FAILURES_PER_ACCOUNT", default=5)
AUTH_FAILURES_PER_IP = env.int("AUTH_FAILURES_PER_IP", default=20)
AUTH_FAILURE_WINDOW_SECONDS = env.int("AUTH_FAILURE_WINDOW_SECONDS", default=900)
# Set when behind a proxy that sets X-Forwarded-For.
TRUST_X_FORWARDED_FOR = env.bool("TRUST_X_FORWARDED_FOR", default=False)
OTP_TOTP_ISSUER = env("OTP_TOTP_ISSUER", default="Platform")
