"""Fixtures of the sandbox tests: bubblewrap required (skipped on a laptop without it, never in CI: .ci/run sets
REQUIRE_SANDBOX), a probe that tries to reach what tenant code must not, and projects that run it."""
import os
import socket
import textwrap

import pytest
from django.conf import settings

from tests.conftest import hosted_repo
from tests.platform_app.projects.factories import ProjectFactory


@pytest.fixture
def sandbox(settings, tmp_path):
    """Builds and instances in bubblewrap, with artifacts and scratch folders of this test."""
    from platform_app.sandbox.runners import bubblewrap_problem

    problem = bubblewrap_problem()
    if problem:
        if os.environ.get("REQUIRE_SANDBOX"):
            pytest.fail(f"The sandbox must run here (REQUIRE_SANDBOX is set): {problem}")
        pytest.skip(f"needs bubblewrap (apt-get install bubblewrap): {problem}")
    settings.SANDBOX_RUNNER = "bubblewrap"
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}
    return settings


def _port_of(url: str, default: int) -> int:
    from urllib.parse import urlsplit

    return urlsplit(url).port or default if url else default


def secrets_of_the_platform() -> dict:
    """What tenant code must never see: name -> the value itself (for searching logs and pages)."""
    from platform_app.services.identity.keys import _private_pem

    found = {"SECRET_KEY": settings.SECRET_KEY, "ENV_ENCRYPTION_KEY": settings.ENV_ENCRYPTION_KEYS[0],
             "JWT signing key": _private_pem().decode().strip().splitlines()[1]}
    for name in ("DATABASE_URL", "REDIS_URL"):
        if os.environ.get(name):
            found[name] = os.environ[name]
    return found


def probe_script(*, web_port: int, other_artifact, extra_ports: dict | None = None) -> str:
    """A Python program that tries each escape and prints `PROBE <name> -> <what happened>`."""
    data = settings.DATA_DIR
    targets = {
        "jwt-key": str(data / "jwt-private.pem"),
        "encryption-key": str(data / "env-encryption-key"),
        "django-secret": str(data / "django-secret-key"),
        "other-artifact": str(other_artifact),
        "relative-key": "../../data/jwt-private.pem",
    }
    ports = {"postgresql": _port_of(os.environ.get("DATABASE_URL", ""), 5432),
             "redis": _port_of(os.environ.get("REDIS_URL", ""), 6379), "web": web_port, **(extra_ports or {})}
    return textwrap.dedent(f"""\
        import os, socket
        def probe(name, fn):
            try:
                result = fn()
            except Exception as exc:
                result = "refused: " + type(exc).__name__
            print("PROBE", name, "->", str(result)[:300].replace(chr(10), " "), flush=True)
        for name, path in {targets!r}.items():
            probe("read " + name, lambda path=path: open(path, "rb").read(100))
        probe("environ", lambda: sorted(os.environ))
        probe("pid1-environ", lambda: open("/proc/1/environ", "rb").read().split(b"\\0"))
        probe("processes", lambda: sorted(open(f"/proc/{{p}}/cmdline", "rb").read()[:40]
                                          for p in os.listdir("/proc") if p.isdigit()))
        probe("root", lambda: sorted(os.listdir("/")))
        probe("up", lambda: sorted(os.listdir("../..")))
        for name, port in {ports!r}.items():
            probe("connect " + name, lambda port=port: socket.create_connection(("127.0.0.1", port), 2) and "CONNECTED")
        def through_proxy(target):
            s = socket.create_connection(("127.0.0.1", 3128), 2)
            s.sendall(f"CONNECT {{target}} HTTP/1.1\\r\\nHost: {{target}}\\r\\n\\r\\n".encode())
            return s.recv(200).split(b"\\r\\n")[0]
        for target in ("127.0.0.1:{ports['postgresql']}", "127.0.0.1:{ports['redis']}", "127.0.0.1:{web_port}",
                       "169.254.169.254:80", "10.0.0.1:80", "[::1]:{web_port}", "0x7f.1:{web_port}"):
            probe("proxy " + target, lambda target=target: through_proxy(target))
        """)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def make_project(workspace):
    """`make_project(slug, files, **fields)`: a project on a repository the platform hosts (in acme, unless
    `workspace=` says otherwise)."""

    def make(slug: str, files: dict, **fields):
        owner = fields.pop("workspace", workspace)
        return ProjectFactory(workspace=owner, name=slug, slug=slug, git_url=hosted_repo(owner, slug, files), **fields)

    return make


def deploy(client, project, capture, env: str = "production"):
    """Trigger a deployment through the API and run its build (inline, in the sandbox); the deployment."""
    from platform_app.models import Deployment

    with capture(execute=True):
        resp = client.post(f"/v1/orgs/{project.workspace.slug}/projects/{project.pk}/deployments", {"env": env},
                           format="json")
    assert resp.status_code == 201, resp.content
    return Deployment.objects.get(pk=resp.json()["id"])


def log_text(deployment) -> str:
    from platform_app.models import LogLine

    return "\n".join(LogLine.objects.filter(deployment=deployment).order_by("seq").values_list("text", flat=True))


def probes(text: str) -> dict:
    """`PROBE <name> -> <result>` lines of a log, by name."""
    found = {}
    for line in text.splitlines():
        if line.startswith("PROBE ") and " -> " in line:
            name, _, result = line[6:].partition(" -> ")
            found[name] = result
    return found
