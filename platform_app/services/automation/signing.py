"""Secrets shown once, and the signature of every outbound delivery (log drains, alert webhooks):
`x-svc-signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, the payments scheme (docs/automation.md)."""
import hashlib
import hmac
import secrets
import time

from platform_app.services.env.crypto import decrypt, encrypt

SIGNATURE_HEADER = "x-svc-signature"


def secret_new() -> tuple[str, str]:
    """(plain secret, its encrypted form to store): the plain value is shown once; the encrypted one lets the
    platform sign with it (env var keys, rotated with them)."""
    plain = "svcs_" + secrets.token_urlsafe(32)
    return plain, encrypt(plain)


def secret_of(encrypted: str) -> str:
    return decrypt(encrypted)


def signature(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The header value for `body` signed with `secret` at `timestamp` (now by default)."""
    t = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def signature_valid(secret: str, body: bytes, header: str, *, tolerance: int = 300, now: int | None = None) -> bool:
    """What a receiver does (and the docs show): parse `t` and `v1`, recompute, compare in constant time."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        t = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((int(time.time()) if now is None else now) - t) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))
