"""What a node tells the platform is the word of a machine its workspace controls: the address the edge sends
visitors to passes the outbound guard (at join and at every request)."""
import pytest

from platform_app.models import AgentNode, Deployment
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.agents.factories import InstanceFactory
from tests.platform_app.projects.factories import ProjectFactory

INTERNAL = b"aws_secret_access_key=platform-bucket-admin"  # what an internal service on loopback would tell


@pytest.fixture
def internal_service(httpserver):
    """A local HTTP server standing for a service only the platform's machines reach (an S3 server, metadata)."""
    httpserver.expect_request("/").respond_with_data(INTERNAL, content_type="text/plain")
    return httpserver


@pytest.fixture
def runtime_deployment(workspace):
    project = ProjectFactory(workspace=workspace, slug="shop")
    deployment = Deployment.objects.create(project=project, env="production", branch="main", status="ready",
                                           artifact_path="runtime", snapshot={"start": "node server.js"})
    project.production_deployment = deployment
    project.save(update_fields=["production_deployment"])
    return deployment


def join(api, token, host="127.0.0.1"):
    return api.post("/v1/agents/join", {"token": token, "name": "n1", "runtimes": ["process"], "host": host},
                    format="json")


def beat(api, node, body):
    return api.post(f"/v1/agents/{node['nodeId']}/heartbeat", body, format="json",
                    HTTP_AUTHORIZATION=f"Bearer {node['nodeToken']}")


def test_a_workspace_node_on_an_internal_address_gets_no_visitor_request(alice_client, api, client, settings,
                                                                         runtime_deployment, internal_service):
    token = alice_client.post("/v1/orgs/acme/agents/invite", format="json").json()["token"]
    node = join(api, token).json()  # the test settings open 127.0.0.0/8, as an operator's allow-list could
    assignments = beat(api, node, {}).json()["assignments"]
    assert [a["deploymentId"] for a in assignments] == [runtime_deployment.pk]
    report = {"instanceId": assignments[0]["instanceId"], "status": "running", "port": internal_service.port}
    assert beat(api, node, {"instances": [report]}).status_code == 200
    assert client.get("/", HTTP_HOST="shop.localhost").content == INTERNAL  # opened: the edge reaches it

    settings.OUTBOUND_ALLOWED_NETWORKS = []  # production: loopback is inside
    visit = client.get("/", HTTP_HOST="shop.localhost")
    assert visit.status_code == 502 and visit.content == b"The instance did not answer."
    assert len(internal_service.log) == 1  # only the visit made while the allow-list opened loopback


def test_a_workspace_node_cannot_join_on_an_internal_address(api, settings, workspace):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    for host in ("127.0.0.1", "localhost", "10.0.0.5", "169.254.169.254", "0x7f.1", "::1", "[::1]",
                 "127.0.0.1:6379", "example.com/x", "user@127.0.0.1"):
        _, token = agent_invite_create(workspace=workspace)
        refused = join(api, token, host=host)
        assert refused.status_code == 400, (host, refused.content)
        assert refused.json()["code"] == "url_not_allowed" and list(refused.json()["details"]) == ["host"]
        assert join(api, token, host="8.8.8.8").status_code == 200  # a refused join leaves the invite unspent
    assert AgentNode.objects.filter(host="8.8.8.8").count() == 10
    assert not AgentNode.objects.exclude(host="8.8.8.8").exists()


def test_a_platform_node_on_loopback_still_serves(api, client, settings, runtime_deployment, internal_service):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    _, token = agent_invite_create(workspace=None)  # manage.py node_invite: the operator chose the address
    node = join(api, token).json()
    assert AgentNode.objects.get(pk=node["nodeId"]).host == "127.0.0.1"
    instance = InstanceFactory(deployment=runtime_deployment, node_id=node["nodeId"], status="starting")
    report = {"instanceId": instance.pk, "status": "running", "port": internal_service.port}
    assert beat(api, node, {"instances": [report]}).status_code == 200
    assert client.get("/", HTTP_HOST="shop.localhost").content == INTERNAL
