"""Encryption at rest for env var values: MultiFernet over ENV_ENCRYPTION_KEYS (first encrypts, all decrypt)."""
from functools import lru_cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(k.encode() if isinstance(k, str) else k) for k in keys])


def encrypt(value: str) -> str:
    return _fernet(tuple(settings.ENV_ENCRYPTION_KEYS)).encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet(tuple(settings.ENV_ENCRYPTION_KEYS)).decrypt(token.encode()).decode()


def rotate(token: str) -> str:
    """Re-encrypt under the current first key (used after prepending a new key)."""
    return _fernet(tuple(settings.ENV_ENCRYPTION_KEYS)).rotate(token.encode()).decode()
