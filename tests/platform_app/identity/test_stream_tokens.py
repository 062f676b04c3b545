"""Log-stream tokens (`POST /v1/auth/ws-token`): they carry the workspace binding and the credential they were
made with, die with it, are short-lived, and an open stream ends when its credential is revoked."""
import time

import jwt
import pytest
from django.test import Client

from platform_app.models import Deployment
from platform_app.services.deployments.deployments import log_append
from platform_app.services.identity.auth import session_start
from platform_app.services.identity.keys import token_issue
from platform_app.services.identity.tokens import api_token_revoke
from tests.conftest import bearer_client
from tests.factories import PASSWORD, ApiTokenFactory, MembershipFactory, WorkspaceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.deployments.test_log_stream import events, log_ids
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body

pytestmark = pytest.mark.django_db

STREAM = "/v1/orgs/{org}/deployments/{dpl}/logs/stream"


def building(workspace, slug="site"):
    project = ProjectFactory(workspace=workspace, name=slug, slug=slug, git_url="https://git.example.com/s.git")
    deployment = DeploymentFactory(project=project, env="preview", branch="main", status="building")
    log_append(deployment, "first line")
    return deployment


def ended(deployment):
    Deployment.objects.filter(pk=deployment.pk).update(status="ready")
    return deployment


@pytest.fixture
def second_workspace(alice):
    """A2: another workspace alice owns."""
    workspace = WorkspaceFactory(slug="acme2", name="Acme 2")
    MembershipFactory(workspace=workspace, user=alice, role="owner")
    return workspace


def stream_token(client) -> str:
    resp = client.post("/v1/auth/ws-token")
    assert resp.status_code == 200, resp.json()
    return resp.json()["token"]


def stream(token: str, org: str, deployment):
    return Client().get(STREAM.format(org=org, dpl=deployment.pk) + f"?token={token}",
                        HTTP_ACCEPT="text/event-stream")


def bound_token(user, workspace, scopes=("read",)):
    raw = "svc_bound" + "x" * 40
    row = ApiTokenFactory(user=user, workspace=workspace, scopes=list(scopes), raw=raw)
    return row, bearer_client(raw)


def test_stream_token_keeps_the_workspace_binding_of_its_api_token(alice, workspace, second_workspace):
    mine, other = ended(building(workspace)), ended(building(second_workspace, "other"))
    _, client = bound_token(alice, workspace)
    token = stream_token(client)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["org"] == workspace.pk and claims["tid"] and claims["scopes"] == ["read"]

    assert stream(token, "acme", mine).status_code == 200
    refused = stream(token, "acme2", other)
    assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    # the API token itself is refused there too: the stream token is no wider
    assert client.get(STREAM.format(org="acme2", dpl=other.pk)).status_code == 404


def test_stream_token_dies_with_its_api_token(alice, workspace):
    deployment = ended(building(workspace))
    row, client = bound_token(alice, workspace)
    token = stream_token(client)
    assert stream(token, "acme", deployment).status_code == 200
    api_token_revoke(token=row, actor=alice)
    resp = stream(token, "acme", deployment)
    assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"


def test_stream_token_dies_with_its_sign_in_session(alice, workspace):
    deployment = ended(building(workspace))
    issued = session_start(user=alice)
    client = bearer_client(issued.access_token)
    token = stream_token(client)
    assert jwt.decode(token, options={"verify_signature": False})["sid"] == issued.session.pk
    assert stream(token, "acme", deployment).status_code == 200
    assert client.post("/v1/auth/sign-out").status_code == 204
    resp = stream(token, "acme", deployment)
    assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"


def test_stream_token_dies_with_the_dashboard_session(alice, workspace):
    deployment = ended(building(workspace))
    browser = Client()
    assert browser.post("/dashboard/login/", {"email": alice.email, "password": PASSWORD}).status_code == 302
    token = stream_token(browser)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert browser.cookies["sessionid"].value not in token and "dss" in claims  # the key travels encrypted
    assert stream(token, "acme", deployment).status_code == 200
    browser.post("/dashboard/logout/")
    assert stream(token, "acme", deployment).status_code == 401


def test_an_invalid_bearer_beside_a_valid_stream_token_is_refused(alice, workspace):
    """A request that presents a credential that fails is refused, whatever else it carries."""
    deployment = ended(building(workspace))
    token = stream_token(bearer_client(session_start(user=alice).access_token))
    url = STREAM.format(org="acme", dpl=deployment.pk) + f"?token={token}"
    resp = Client().get(url, HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION="Bearer svc_" + "y" * 40)
    assert resp.status_code == 401 and resp.json()["code"] == "unauthenticated"
    assert Client().get(url, HTTP_ACCEPT="text/event-stream").status_code == 200


def test_stream_token_is_short_lived_and_names_its_credential(alice, workspace):
    deployment = ended(building(workspace))
    token = stream_token(bearer_client(session_start(user=alice).access_token))
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 60
    # a token naming no credential (what ws-token issued before) is refused
    bare, _ = token_issue(subject=str(alice.pk), audience="platform-stream", ttl_seconds=60, scopes=["read"])
    resp = stream(bare, "acme", deployment)
    assert resp.status_code == 401 and resp.json()["code"] == "invalid_token"


def test_an_open_stream_ends_when_its_api_token_is_revoked(alice, workspace, settings):
    settings.LOG_STREAM_RECHECK_SECONDS = 0.2
    deployment = building(workspace)
    row, client = bound_token(alice, workspace)
    resp = stream(stream_token(client), "acme", deployment)
    assert resp.status_code == 200
    chunks = iter(resp.streaming_content)
    seen = ""
    while log_ids(seen) != [1]:
        seen += next(chunks).decode()
    api_token_revoke(token=row, actor=alice)
    time.sleep(0.3)  # past the recheck interval: a line published now wakes the stream, which checks first
    log_append(deployment, "written after the revocation")
    # the next thing sent is the end, although the build is still running: not the new line
    assert events(next(chunks).decode()) == [("", "revoked", "token_revoked")]
    assert list(chunks) == []


def test_an_open_stream_ends_when_the_member_leaves(alice, bob, workspace, settings, as_user):
    settings.LOG_STREAM_RECHECK_SECONDS = 0.2
    deployment = building(workspace)
    resp = as_user(bob).get(STREAM.format(org="acme", dpl=deployment.pk))
    chunks = iter(resp.streaming_content)
    seen = ""
    while log_ids(seen) != [1]:
        seen += next(chunks).decode()
    bob.memberships.all().delete()
    time.sleep(0.3)  # past the recheck interval
    log_append(deployment, "written after bob left")
    assert events(next(chunks).decode()) == [("", "revoked", "not_a_member")]
    assert list(chunks) == []


def test_a_stream_token_made_with_an_mcp_token_keeps_its_binding_and_dies_with_it(alice, workspace,
                                                                                 second_workspace):
    from django.utils import timezone

    from platform_app.models import McpToken
    from tests.platform_app.mcp.factories import McpTokenFactory

    McpTokenFactory(user=alice, raw="mcpa_streaming", scopes=["read"], workspace=workspace)
    deployment, other = ended(building(workspace)), ended(building(second_workspace, "other"))
    token = stream_token(bearer_client("mcpa_streaming"))
    body = sse_body(stream(token, "acme", deployment)).decode()
    assert [e[2] for e in events(body) if e[1] == "log"] == ["first line"]
    assert stream(token, "acme2", other).status_code == 404
    McpToken.objects.update(revoked_at=timezone.now())
    resp = stream(token, "acme", deployment)
    assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"
