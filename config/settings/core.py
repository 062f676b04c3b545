"""What every settings module builds on: the environment reader, the data folder, and the few values the
area modules derive theirs from. It imports no other settings module, so areas import from here, never from
`base` (which imports them)."""
import secrets
from pathlib import Path

import environ

from config.secret_files import secret_file

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


SECRET_KEY = env("DJANGO_SECRET_KEY", default="") or secret_file(
    DATA_DIR / "django-secret-key", lambda: secrets.token_urlsafe(50).encode()).decode().strip()
SITE_URL = env("SITE_URL", default="http://localhost:8000")
REDIS_URL = env("REDIS_URL", default="")
