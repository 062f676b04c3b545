"""No import circles between the project's own modules (docs/architecture.md, "Dependency rule").

Every import counts, including those inside functions: a deferred import hides a circle from Python's import
machinery, not from the design. `from package import name` counts as importing `package.name` when that is a
module. Migrations and tests are left out; they sit outside the layering.
"""
import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("config", "platform_app", "otp_app", "warehouse_app")
SKIPPED_PARTS = {"migrations", "tests", "__pycache__"}

# Circles accepted on purpose. Empty: every circle found is a layering fault to fix, not to list here.
ALLOWED_CYCLES: list[frozenset[str]] = []


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if SKIPPED_PARTS.intersection(parts):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _owning_package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _known(target: str, modules: dict[str, Path]) -> str | None:
    """`target` if it is a project module, else its nearest project ancestor (`a.b.func` → `a.b`)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def _parse(path: Path) -> ast.Module:
    """CPython 3.11 (before 3.11.8) keeps one AST recursion counter per interpreter, not per thread (gh-106905):
    when another thread builds an AST at the same moment (3.11's traceback formatting parses the failing line, so
    any thread logging an exception does), ast.parse can fail with a spurious SystemError. It is a race, not a
    property of the file: parse again."""
    source = path.read_text()
    try:
        return ast.parse(source, filename=str(path))
    except SystemError:
        return ast.parse(source, filename=str(path))


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = _parse(path)
    found = set()
    for node in ast.walk(tree):  # the whole tree: imports inside functions and classes count too
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _known(alias.name, modules)):
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _owning_package(name, path)
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:  # `from package import module`
                    found.add(submodule)
                elif (target := _known(base, modules)):
                    found.add(target)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep chains)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def test_the_graph_sees_deferred_and_from_package_imports():
    graph = import_graph()
    # A known edge of each kind, so a broken parser cannot pass by finding nothing.
    assert "config.jobs" in graph["platform_app.services.deployments.deployments"]
    assert any(target.startswith("platform_app.services.") for target in graph["platform_app.tasks.deployments"])
    assert "config.settings.api" in graph["config.settings.base"]


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert [sorted(c) for c in strongly_connected_components(graph) if len(c) > 1] == [["a", "b", "c"]]


def test_allowed_cycles_name_real_modules():
    modules = project_modules()
    for cycle in ALLOWED_CYCLES:
        assert cycle <= modules.keys(), sorted(cycle - modules.keys())


def test_no_import_cycles():
    cycles = [c for c in strongly_connected_components(import_graph()) if len(c) > 1]
    unexpected = [c for c in cycles if frozenset(c) not in ALLOWED_CYCLES]
    assert not unexpected, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in unexpected)


HEAVY = ("osmium", "shapely", "numpy", "pyproj", "httpx", "dns", "boto3", "botocore", "stripe", "mcp", "stdnum",
         "pydoc", "croniter", "pycountry")


def test_a_web_worker_loads_no_library_it_does_not_serve_with():
    """The OSM importer's libraries (osmium, shapely with numpy, pyproj: about 38 MiB a process) load only where an
    import runs; the HTTP client and dnspython where a request goes out or a name is resolved; the S3, payments
    and MCP SDKs, python-stdnum (with pydoc) and croniter where they are used: a web worker that merely serves
    pages carries none of them."""
    code = ("import sys, django.urls; import config.asgi; django.urls.get_resolver().url_patterns; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.test", "PATH": "/usr/bin:/bin"}
    env.update({k: v for k, v in os.environ.items() if k in ("DATABASE_URL", "REDIS_URL", "DATA_DIR")})
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
