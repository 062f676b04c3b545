"""Codes: drawn from `secrets`, stored only as a keyed hash, sealed on their way to a delivery task."""
import base64
import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def code_new() -> str:
    return f"{secrets.randbelow(10**6):06d}"


def code_hash(record_id: str, code: str) -> str:
    """HMAC-SHA256 over the record id and the code, with a server secret."""
    return hmac.new(settings.OTP_CODE_SECRET.encode(), f"{record_id}:{code}".encode(), hashlib.sha256).hexdigest()


def _fernet() -> Fernet:
    key = hashlib.sha256(f"seal:{settings.OTP_CODE_SECRET}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def code_seal(code: str) -> str:
    """The delivery task needs the code once; the broker only ever sees it encrypted."""
    return _fernet().encrypt(code.encode()).decode()


def code_unseal(sealed: str) -> str | None:
    try:
        return _fernet().decrypt(sealed.encode(), ttl=settings.OTP_CODE_TTL_SECONDS + 60).decode()
    except InvalidToken:
        return None
