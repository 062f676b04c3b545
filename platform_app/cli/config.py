"""Where the client keeps what it knows: credentials in the user's config folder, the link in the project folder.

The config folder is platformdirs' (`$XDG_CONFIG_HOME/svc` on Linux), so a test or a CI job gets a clean one by
setting XDG_CONFIG_HOME. Credentials are one JSON file, mode 0600 in a 0700 folder, one entry per API address.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs

DEFAULT_API = "http://localhost:8000"
LINK_DIR = ".svc"
LINK_FILE = "project.json"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir("svc", appauthor=False))


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


def normalize_api(url: str) -> str:
    return url.strip().rstrip("/")


def load_credentials() -> dict:
    try:
        data = json.loads(credentials_path().read_text())
    except (OSError, ValueError):
        return {"hosts": {}}
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict):
        return {"hosts": {}}
    return data


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only, from the first byte (no window at 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def save_host(api: str, entry: dict) -> Path:
    data = load_credentials()
    data["hosts"][normalize_api(api)] = entry
    data["current"] = normalize_api(api)
    path = credentials_path()
    _write_private(path, json.dumps(data, indent=2) + "\n")
    return path


def forget_host(api: str) -> None:
    data = load_credentials()
    data["hosts"].pop(normalize_api(api), None)
    if data.get("current") == normalize_api(api):
        data.pop("current")
    _write_private(credentials_path(), json.dumps(data, indent=2) + "\n")


def host_entry(api: str) -> dict | None:
    entry = load_credentials()["hosts"].get(normalize_api(api))
    return entry if isinstance(entry, dict) and isinstance(entry.get("token"), str) else None


def current_api() -> str | None:
    current = load_credentials().get("current")
    return current if isinstance(current, str) and current else None


# The link: which workspace and project a folder deploys to -----------------------------------------------------

def find_link(start: Path) -> tuple[Path, dict] | None:
    """The nearest `.svc/project.json` at or above `start` (like git finds `.git`), with the folder holding it."""
    start = start.resolve()
    for folder in (start, *start.parents):
        path = folder / LINK_DIR / LINK_FILE
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("orgId") and data.get("projectId"):
                return folder, data
    return None


def write_link(folder: Path, data: dict) -> Path:
    link_dir = folder / LINK_DIR
    link_dir.mkdir(exist_ok=True)
    (link_dir / ".gitignore").write_text("*\n")  # nothing of .svc/ is ever committed
    path = link_dir / LINK_FILE
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
