"""Fixtures of the dashboard page tests: signed-in Django test clients per role."""
import pytest
from django.test import Client

from tests.factories import PASSWORD, MembershipFactory, UserFactory
from tests.platform_app.projects.factories import ProjectFactory


def sign_in(user) -> Client:
    client = Client()
    resp = client.post("/dashboard/login/", {"email": user.email, "password": PASSWORD})
    assert resp.status_code == 302, resp.content
    return client


@pytest.fixture
def owner(alice):
    return sign_in(alice)


@pytest.fixture
def developer(bob):
    return sign_in(bob)


@pytest.fixture
def viewer_user(workspace):
    user = UserFactory(email="vera@example.com")
    MembershipFactory(workspace=workspace, user=user, role="viewer")
    return user


@pytest.fixture
def viewer(viewer_user):
    return sign_in(viewer_user)


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, slug="site", name="Site")
