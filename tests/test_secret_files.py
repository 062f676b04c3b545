"""The secrets the embedded default generates into the data folder are readable by their owner only."""
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY_FILES = ("django-secret-key", "env-encryption-key", "jwt-private.pem")


def start(data_dir: Path) -> str:
    """A process that starts with `make run`'s settings on `data_dir` and signs a JWT; its SECRET_KEY."""
    code = ("import django; django.setup(); from django.conf import settings; "
            "from platform_app.services.identity.keys import signing_key; signing_key(); print(settings.SECRET_KEY)")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.local", "PATH": "/usr/bin:/bin", "DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_generated_key_file_is_0600_and_kept_across_starts(tmp_path):
    first = start(tmp_path)
    assert {name: mode(tmp_path / name) for name in KEY_FILES} == dict.fromkeys(KEY_FILES, 0o600)
    assert start(tmp_path) == first and len(first) > 40
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_key_file_an_older_start_left_readable_is_narrowed(tmp_path):
    (tmp_path / "django-secret-key").write_text("an-older-secret-of-fifty-characters-or-so-0123456789")
    (tmp_path / "django-secret-key").chmod(0o644)
    assert start(tmp_path) == "an-older-secret-of-fifty-characters-or-so-0123456789"
    assert mode(tmp_path / "django-secret-key") == 0o600
