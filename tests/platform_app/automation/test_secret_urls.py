"""Credentials inside log-drain and alert-webhook URLs (userinfo, query values, key-like path segments) are shown
only to callers holding `admin`: everyone else (viewers, developers, `read` tokens of an owner) sees them masked, in
the API and on the dashboard."""
import pytest

from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.automation.factories import AlertRuleFactory, LogDrainFactory
from tests.platform_app.pages.conftest import sign_in
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

DRAIN_URL = "https://ingest:Pa55w0rd@logs.example.com/v1/input?api_key=dd-Secret-Key-123&region=eu"
WEBHOOK_URL = "https://hooks.example.com/services/T0001/B0002/XyZsecretPathToken12345?sig=hook-Sig-456"
SECRETS = ("Pa55w0rd", "dd-Secret-Key-123", "XyZsecretPathToken12345", "hook-Sig-456")
MASKED_DRAIN = "https://****@logs.example.com/v1/input?api_key=****&region=****"
MASKED_WEBHOOK = "https://hooks.example.com/services/T0001/B0002/****?sig=****"


@pytest.fixture
def project(workspace):
    project = ProjectFactory(workspace=workspace, name="Site", slug="site")
    LogDrainFactory(project=project, url=DRAIN_URL)
    AlertRuleFactory(project=project, channels=[{"type": "webhook", "url": WEBHOOK_URL},
                                                {"type": "email", "to": ["ops@example.com"]}])
    return project


@pytest.fixture
def viewer_user(workspace):
    user = UserFactory(email="vera@example.com")
    MembershipFactory(workspace=workspace, user=user, role="viewer")
    return user


def api_urls(client, project) -> tuple[str, str]:
    drains = client.get(f"/v1/orgs/acme/projects/{project.pk}/log-drains")
    alerts = client.get(f"/v1/orgs/acme/projects/{project.pk}/alerts")
    assert drains.status_code == 200 and alerts.status_code == 200, (drains.json(), alerts.json())
    webhook = next(c for c in alerts.json()["items"][0]["channels"] if c["type"] == "webhook")
    return drains.json()["items"][0]["url"], webhook["url"]


def test_admins_see_the_whole_urls(alice, project, as_user, as_token):
    assert api_urls(as_user(alice), project) == (DRAIN_URL, WEBHOOK_URL)
    assert api_urls(as_token(alice, scopes=["admin"]), project) == (DRAIN_URL, WEBHOOK_URL)


@pytest.mark.parametrize("who", ["viewer", "developer", "read token of the owner", "deploy token of the owner"])
def test_everyone_else_sees_them_masked(alice, bob, viewer_user, project, as_user, as_token, who):
    client = {"viewer": lambda: as_user(viewer_user), "developer": lambda: as_user(bob),
              "read token of the owner": lambda: as_token(alice, scopes=["read"]),
              "deploy token of the owner": lambda: as_token(alice, scopes=["deploy", "env:write"])}[who]()
    assert api_urls(client, project) == (MASKED_DRAIN, MASKED_WEBHOOK)


def test_dashboard_pages_mask_them_for_viewers(alice, viewer_user, project):
    for user, shown in ((viewer_user, False), (alice, True)):
        browser = sign_in(user)
        drains = browser.get("/dashboard/acme/projects/site/log-drains/").content.decode()
        alerts = browser.get("/dashboard/acme/projects/site/alerts/").content.decode()
        page = drains + alerts
        assert all((secret in page) == shown for secret in SECRETS), user
        if not shown:
            assert "logs.example.com/v1/input" in drains and "hooks.example.com/services" in alerts
