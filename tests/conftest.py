"""Actors and API clients shared by every test module.

alice owns workspace `acme`, bob is a developer there, charlie is an outsider
with his own workspace (healthchecks' alice/bob/charlie).
"""
import pytest
from rest_framework.test import APIClient

from platform_app.services.auth import session_start
from tests.factories import ApiTokenFactory, MembershipFactory, UserFactory, WorkspaceFactory


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


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

    path.mkdir()
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git = ["git", "-C", str(path), "-c", "user.email=dev@example.com", "-c", "user.name=Dev"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "initial"], check=True)
    return path
