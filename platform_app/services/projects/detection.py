"""Framework detection: what a repository is and how to build and start it.

`detect(root)` reads files only (never runs anything). Rules are checked from the most
specific to the most general; the first match wins and names its evidence (the file
and what in it matched). Builds call the same function on the cloned repository.
"""
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

RUNTIMES = ("static", "node", "python", "docker")
# Folders never searched for app roots (dependencies, build output, VCS data).
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", ".next", "out", "vendor"}


@dataclass
class Detection:
    """The detected framework and the commands a build would run."""

    framework: str
    runtime: str
    install_command: str = ""
    build_command: str = ""
    output_directory: str = ""
    start_command: str = ""
    evidence: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _read(path: Path, limit: int = 200_000) -> str:
    try:
        return path.read_text(errors="replace")[:limit]
    except OSError:
        return ""


def _package_json(root: Path) -> dict | None:
    path = root / "package.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(_read(path))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _node_install(root: Path, pkg: dict) -> str:
    if (root / "pnpm-lock.yaml").is_file():
        return "pnpm install --frozen-lockfile"
    if (root / "yarn.lock").is_file():
        return "yarn install --frozen-lockfile"
    if (root / "package-lock.json").is_file():
        return "npm ci"
    deps = {**(pkg.get("dependencies") or {}), **(pkg.get("devDependencies") or {})}
    return "npm install" if deps else ""


def _node_run(pkg: dict, script: str, fallback: str = "") -> str:
    return f"npm run {script}" if script in (pkg.get("scripts") or {}) else fallback


def _detect_node(root: Path, pkg: dict) -> Detection:
    deps = {**(pkg.get("dependencies") or {}), **(pkg.get("devDependencies") or {})}
    scripts = pkg.get("scripts") or {}
    install = _node_install(root, pkg)
    if "next" in deps:
        return Detection("nextjs", "node", install, _node_run(pkg, "build", "next build"), ".next",
                         _node_run(pkg, "start", "next start -p $PORT"), ["package.json: dependency next"])
    if "astro" in deps:
        return Detection("astro", "static", install, _node_run(pkg, "build", "astro build"), "dist", "",
                         ["package.json: dependency astro"])
    if "react-scripts" in deps:
        return Detection("create-react-app", "static", install, _node_run(pkg, "build", "react-scripts build"),
                         "build", "", ["package.json: dependency react-scripts"])
    if "vite" in deps:
        config = next((n for n in ("vite.config.ts", "vite.config.js", "vite.config.mjs") if (root / n).is_file()), None)
        evidence = ["package.json: dependency vite"] + ([config] if config else [])
        return Detection("vite", "static", install, _node_run(pkg, "build", "vite build"), "dist", "", evidence)
    start = "npm start" if "start" in scripts else (f"node {pkg['main']}" if isinstance(pkg.get("main"), str) else "")
    if not start:
        start = next((f"node {n}" for n in ("server.js", "index.js", "app.js") if (root / n).is_file()), "")
    return Detection("node", "node", install, _node_run(pkg, "build"), "", start, ["package.json"])


def _python_requirements(root: Path) -> str:
    text = _read(root / "requirements.txt").lower()
    text += _read(root / "pyproject.toml").lower()
    text += _read(root / "Pipfile").lower()
    return text


def _python_install(root: Path) -> str:
    if (root / "requirements.txt").is_file():
        return "pip install -r requirements.txt"
    if (root / "pyproject.toml").is_file():
        return "pip install ."
    if (root / "Pipfile").is_file():
        return "pipenv install --deploy --system"
    return ""


def _find_module_with(root: Path, needle: str) -> str | None:
    for name in ("main.py", "app.py", "application.py", "server.py", "wsgi.py", "asgi.py"):
        if needle in _read(root / name):
            return name
    return None


def _detect_python(root: Path) -> Detection | None:
    markers = [n for n in ("requirements.txt", "pyproject.toml", "Pipfile", "manage.py", "main.py", "app.py",
                           "wsgi.py", "server.py") if (root / n).is_file()]
    if not markers:
        return None
    deps = _python_requirements(root)
    install = _python_install(root)
    if (root / "manage.py").is_file() and ("django" in deps or "django" in _read(root / "manage.py")):
        project = next((p.parent.name for p in root.glob("*/wsgi.py")), "config")
        return Detection("django", "python", install, "python manage.py collectstatic --noinput", "",
                         f"gunicorn {project}.wsgi --bind 0.0.0.0:$PORT", ["manage.py", "django in dependencies"])
    module = _find_module_with(root, "FastAPI(")
    if module or "fastapi" in deps:
        module = module or "main.py"
        return Detection("fastapi", "python", install, "", "",
                         f"uvicorn {module[:-3]}:app --host 0.0.0.0 --port $PORT",
                         [module if (root / module).is_file() else "fastapi in dependencies"])
    module = _find_module_with(root, "Flask(")
    if module or "flask" in deps:
        module = module or "app.py"
        return Detection("flask", "python", install, "", "", f"gunicorn {module[:-3]}:app --bind 0.0.0.0:$PORT",
                         [module if (root / module).is_file() else "flask in dependencies"])
    entry = next((n for n in ("app.py", "main.py", "server.py", "wsgi.py") if (root / n).is_file()), None)
    return Detection("python", "python", install, "", "", f"python {entry}" if entry else "", [entry or markers[0]])


def detect(root: Path) -> Detection:
    """Detect the framework of the app at `root` (a checked-out repository or a sub-folder)."""
    root = Path(root)
    if (root / "Dockerfile").is_file():
        return Detection("docker", "docker", "", "docker build .", "", "", ["Dockerfile"])
    pkg = _package_json(root)
    if pkg is not None:
        return _detect_node(root, pkg)
    python = _detect_python(root)
    if python is not None:
        return python
    if (root / "index.html").is_file():
        return Detection("static", "static", "", "", ".", "", ["index.html"])
    for sub in ("public", "site", "www", "dist"):
        if (root / sub / "index.html").is_file():
            return Detection("static", "static", "", "", sub, "", [f"{sub}/index.html"])
    return Detection("static", "static", "", "", ".", "", [])


def _is_app_root(path: Path) -> bool:
    return any((path / n).is_file() for n in ("Dockerfile", "package.json", "requirements.txt", "pyproject.toml",
                                                "manage.py", "Pipfile", "index.html"))


def discover(root: Path, *, max_depth: int = 3) -> list[tuple[str, Detection]]:
    """App roots of a monorepo: every folder (depth ≤ max_depth) that looks like an app, with its detection.

    A workspace root whose package.json declares `workspaces` is skipped in favour of its packages.
    """
    root = Path(root)
    found: list[tuple[str, Detection]] = []

    def walk(folder: Path, depth: int):
        if _is_app_root(folder):
            pkg = _package_json(folder)
            if not (folder == root and pkg and pkg.get("workspaces")):
                rel = folder.relative_to(root).as_posix()
                found.append((rel if rel != "." else ".", detect(folder)))
                if folder != root:
                    return  # an app's own sub-folders are part of it
        if depth >= max_depth:
            return
        for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()):
            if child.name not in _SKIP_DIRS and not child.name.startswith("."):
                walk(child, depth + 1)

    walk(root, 0)
    return found
