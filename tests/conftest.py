"""Actors and API clients shared by every test module.

alice owns workspace `acme`, bob is a developer there, charlie is an outsider
with his own workspace (healthchecks' alice/bob/charlie).
"""
import os
import threading
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from platform_app.services.identity.auth import session_start
from tests.factories import ApiTokenFactory, MembershipFactory, UserFactory, WorkspaceFactory
from tests.local_servers import DnsServer, GitHttpServer


@pytest.fixture(scope="session", autouse=True)
def _sandbox_can_reach_tmp(tmp_path_factory):
    """A sandbox runs as an unprivileged user when the suite runs as root: it must be able to walk down to the
    per-test folders it binds (pytest makes their parents 0700)."""
    base = tmp_path_factory.getbasetemp()
    for folder in (base, base.parent):
        folder.chmod(folder.stat().st_mode | 0o711)


@pytest.fixture(autouse=True)
def _tmp_path_traversable(request):
    if "tmp_path" in request.fixturenames:
        folder = request.getfixturevalue("tmp_path")
        folder.chmod(folder.stat().st_mode | 0o711)


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import cache

    from config.local_cache import local_caches_clear

    cache.clear()
    local_caches_clear()  # each test has its own database: nothing a process kept from another test is true
    yield
    cache.clear()
    local_caches_clear()


@pytest.fixture
def asgi_application():
    """config.asgi's application as the production server runs it. Its request threads outlive a request (the
    process keeps idle ones), and with them the database connection a request opened where connections persist
    (SQLite's CONN_MAX_AGE): afterwards each idle thread closes its connections and ends, so no later test meets a
    connection this one left (pytest-django refuses database access outside the `db` fixtures)."""
    import config.asgi
    from django.db import connections

    yield config.asgi.application
    while config.asgi._idle:
        thread = config.asgi._idle.pop()
        thread.submit(connections.close_all).result()
        thread.shutdown()


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def workspace(db):
    return WorkspaceFactory(slug="acme", name="Acme")


@pytest.fixture
def alice(workspace):
    user = UserFactory(email="alice@example.com", name="Alice")
    MembershipFactory(workspace=workspace, user=user, role="owner")
    return user


@pytest.fixture
def bob(workspace):
    user = UserFactory(email="bob@example.com", name="Bob")
    MembershipFactory(workspace=workspace, user=user, role="developer")
    return user


@pytest.fixture
def charlie(db):
    user = UserFactory(email="charlie@example.com", name="Charlie")
    MembershipFactory(workspace=WorkspaceFactory(slug="charlies", name="Charlie's"), user=user, role="owner")
    return user


def bearer_client(value: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {value}")
    return client


@pytest.fixture
def as_user():
    """`as_user(user)` → an APIClient carrying a fresh access JWT of that user."""

    def make(user):
        return bearer_client(session_start(user=user).access_token)

    return make


@pytest.fixture
def as_token():
    """`as_token(user, scopes=[...], workspace=None)` → an APIClient with an API token."""

    def make(user, scopes=("admin",), workspace=None, **kwargs):
        raw = f"svc_t{ApiTokenFactory._meta.model.objects.count():04d}" + "x" * 40
        ApiTokenFactory(user=user, scopes=list(scopes), workspace=workspace, raw=raw, **kwargs)
        return bearer_client(raw)

    return make


@pytest.fixture
def alice_client(alice, as_user):
    return as_user(alice)


@pytest.fixture
def travel(time_machine):
    """`travel(seconds)` moves the clock forward from now."""
    from datetime import timedelta

    from django.utils import timezone

    def go(seconds: float):
        time_machine.move_to(timezone.now() + timedelta(seconds=seconds), tick=False)

    return go


def git_repo(path, files: dict):
    """A real Git repository at `path` with `files` committed on `main`."""
    import subprocess

    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git = ["git", "-C", str(path), "-c", "user.email=dev@example.com", "-c", "user.name=Dev"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "initial"], check=True)
    return path


def hosted_repo(workspace, name: str, files: dict) -> str:
    """A repository the platform hosts for `workspace` (under GIT_HOSTED_ROOT/<id>/): its file:// URL, what
    a template project stores. Projects made through the ORM for builds use these."""
    from django.conf import settings

    return git_repo(Path(settings.GIT_HOSTED_ROOT) / workspace.pk / name, files).as_uri()


@pytest.fixture(autouse=True)
def hosted_git_root(settings, tmp_path):
    """Hosted repositories go to a per-test folder, never to the real data folder."""
    settings.GIT_HOSTED_ROOT = tmp_path / "hosted"
    return settings.GIT_HOSTED_ROOT


@pytest.fixture
def make_local_repo(tmp_path):
    """`make_local_repo({"path": "content"}, branches=("dev",), default="main")` → path of a bare repository."""
    import os
    import subprocess

    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_NAME": "Test",
           "GIT_COMMITTER_EMAIL": "test@example.com"}
    counter = iter(range(1000))

    def git(*args, cwd=None):
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    def make(files: dict, *, default: str = "main", branches=()) -> Path:
        n = next(counter)
        work, bare = tmp_path / f"work{n}", tmp_path / f"repo{n}.git"
        work.mkdir()
        for rel, content in files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(content)
        git("init", "--quiet", f"--initial-branch={default}", cwd=work)
        git("add", "--all", cwd=work)
        git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "initial", cwd=work)
        for branch in branches:
            git("branch", branch, cwd=work)
        git("clone", "--quiet", "--bare", str(work), str(bare))
        return bare

    return make


@pytest.fixture
def make_repo(make_local_repo, git_server):
    """`make_repo({"path": "content"}, branches=("dev",), default="main")` → http URL of a bare repository
    served by the local Git server (what a user gives)."""

    def make(files: dict, **kwargs) -> str:
        return git_server.serve(make_local_repo(files, **kwargs))

    return make


@pytest.fixture(scope="session")
def git_server():
    """Git's smart HTTP on 127.0.0.1 (allowed by the test settings): `git_server.serve(path)` → URL."""
    server = GitHttpServer().start()
    yield server
    server.stop()


@pytest.fixture
def dns_server(settings):
    """A DNS server on loopback that the outbound guard asks: `dns_server.records["name"] = ["127.0.0.1"]`."""
    server = DnsServer().start()
    settings.OUTBOUND_DNS_SERVERS = [server.address]
    yield server
    server.stop()


@pytest.fixture
def redis_down(settings, monkeypatch):
    """The cache on a loopback port nothing listens on, with the production options (short socket timeouts)."""
    import socket

    from config import ratelimit

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    timeout = settings.REDIS_CACHE_TIMEOUT_SECONDS
    settings.RATELIMIT_STORE = "cache"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": f"redis://127.0.0.1:{port}/0",
                                   "OPTIONS": {"socket_connect_timeout": timeout, "socket_timeout": timeout}}}
    monkeypatch.setattr(ratelimit, "_last_warning", float("-inf"))  # the next cache error is logged
    return port


@pytest.fixture
def redis_cache(settings):
    """The cache on the Redis of REDIS_URL (skipped without it), emptied before and after, as production has it."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs REDIS_URL (CI sets it)")
    settings.RATELIMIT_STORE = "cache"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": os.environ["REDIS_URL"], "KEY_PREFIX": f"t{os.getpid()}",
                                   "OPTIONS": {"pool_class": "config.redis_pool.SharedConnectionPool"}}}
    from django.core.cache import cache

    cache.clear()
    yield cache
    cache.clear()


def closing(fn):
    """`fn` for a thread of its own, giving the thread's database connection back when done: a pooled connection
    left open by a finished thread is lost to the pool for the rest of the run."""
    def run(*args, **kwargs):
        from django.db import connection

        try:
            return fn(*args, **kwargs)
        finally:
            connection.close()
    return run


def at_once(fn, count: int) -> list:
    """`fn()` on `count` threads released together; their results (each thread closes its database connection)."""
    return all_at_once([fn] * count)


def all_at_once(calls: list) -> list:
    """Each of `calls` on a thread of its own, released together; their results, in the order they finished."""
    barrier, results = threading.Barrier(len(calls)), []

    @closing
    def run(call):
        barrier.wait()
        results.append(call())

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
