"""Settings of environment variables, the secret scanner and preview protection."""
from config.secret_files import secret_file

from .core import DATA_DIR, env


def _dev_fernet_key() -> str:
    """A development key generated once into the data folder (set ENV_ENCRYPTION_KEYS in production)."""
    from cryptography.fernet import Fernet

    return secret_file(DATA_DIR / "env-encryption-key", Fernet.generate_key).decode().strip()


# Comma-separated Fernet keys: the first encrypts, all decrypt (rotation: prepend a new key, re-save, drop the old).
ENV_ENCRYPTION_KEYS = env.list("ENV_ENCRYPTION_KEYS", default=[]) or [_dev_fernet_key()]
ENV_VALUE_MAX_BYTES = 64 * 1024
# Names the platform sets itself; a project cannot override them.
ENV_RESERVED_KEYS = ("PORT", "HOME", "PATH", "PWD", "SHLVL", "HOSTNAME", "NODE_ENV_PLATFORM")
ENV_RESERVED_PREFIXES = ("SVC_",)
PREVIEW_ATTEMPTS_PER_WINDOW = env.int("PREVIEW_ATTEMPTS_PER_WINDOW", default=10)
# across all addresses; past it attempts are slowed (growing delays), never refused outright
PREVIEW_ATTEMPTS_PER_PROJECT = env.int("PREVIEW_ATTEMPTS_PER_PROJECT", default=100)
PREVIEW_ATTEMPT_WINDOW_SECONDS = env.int("PREVIEW_ATTEMPT_WINDOW_SECONDS", default=900)
PREVIEW_COOKIE_MAX_AGE = env.int("PREVIEW_COOKIE_MAX_AGE", default=60 * 60 * 24 * 7)
