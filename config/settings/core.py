"""What every settings module builds on: the environment reader, the data folder, and the few values the
area modules derive theirs from. It imports no other settings module, so areas import from here, never from
`base` (which imports them)."""
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parents[2]
env = environ.Env()
if (BASE_DIR / ".env").exists():
    env.read_env(str(BASE_DIR / ".env"))

# DATA FOLDER
# ------------------------------------------------------------------------------
# Everything the embedded default writes (SQLite, broker queue, keys, artifacts,
# hosted Git repositories) lives in one git-ignored folder.
DATA_DIR = Path(env("DATA_DIR", default=str(BASE_DIR / "data"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _data_secret(name: str, length: int = 50) -> str:
    """A secret generated once into the data folder (development only)."""
    import secrets

    path = DATA_DIR / name
    if not path.exists():
        tmp = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
        tmp.write_text(secrets.token_urlsafe(length))
        tmp.replace(path) if not path.exists() else tmp.unlink()
    return path.read_text().strip()


SECRET_KEY = env("DJANGO_SECRET_KEY", default="") or _data_secret("django-secret-key")
SITE_URL = env("SITE_URL", default="http://localhost:8000")
REDIS_URL = env("REDIS_URL", default="")
