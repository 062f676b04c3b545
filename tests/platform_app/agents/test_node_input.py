"""What a node tells the platform is the word of a machine its workspace controls: the address the edge sends
visitors to passes the outbound guard (at join and at every request), and every heartbeat report is typed and
bounded."""
import pytest

from platform_app.models import AgentNode, Deployment, Instance, RuntimeLogLine, Volume
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


@pytest.mark.parametrize("workspace_node", [False, True], ids=["platform-node", "operators-workspace-node"])
def test_an_operators_node_on_loopback_still_serves(api, client, settings, runtime_deployment, internal_service,
                                                    workspace, workspace_node):
    """`manage.py node_invite` and `manage.py agent --local <org>` (what `make run` starts): the operator chose the
    address on the server itself."""
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    _, token = agent_invite_create(workspace=workspace if workspace_node else None, by_operator=True)
    node = join(api, token).json()
    assert AgentNode.objects.get(pk=node["nodeId"]).host == "127.0.0.1"
    instance = InstanceFactory(deployment=runtime_deployment, node_id=node["nodeId"], status="starting")
    report = {"instanceId": instance.pk, "status": "running", "port": internal_service.port}
    assert beat(api, node, {"instances": [report]}).status_code == 200
    assert client.get("/", HTTP_HOST="shop.localhost").content == INTERNAL


@pytest.mark.parametrize("report, field", [
    ({"restarts": "abc"}, "restarts"),
    ({"restarts": -1}, "restarts"),
    ({"port": "8080"}, "port"),
    ({"port": 70000}, "port"),
    ({"pid": 1.5}, "pid"),
    ({"status": "hacked"}, "status"),
    ({"error": ["x"]}, "error"),
    ({"error": "e" * 2001}, "error"),
    ({"memoryPeakBytes": "lots"}, "memoryPeakBytes"),
    ({"instanceId": 5}, "instanceId"),
    ({"extra": 1}, "extra"),
])
def test_heartbeat_instance_reports_of_the_wrong_type_are_400_and_change_nothing(api, workspace, runtime_deployment,
                                                                                report, field):
    _, token = agent_invite_create(workspace=workspace)
    node = join(api, token).json()
    instance_id = beat(api, node, {}).json()["assignments"][0]["instanceId"]
    before = Instance.objects.values().get(pk=instance_id)
    resp = beat(api, node, {"instances": [{"instanceId": instance_id, "status": "running", "port": 8080, **report}]})
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["code"] == "validation_error" and body["status"] == 400
    assert field in str(body["details"]["instances"])
    assert Instance.objects.values().get(pk=instance_id) == before


@pytest.mark.parametrize("body, field", [
    ({"volumes": [{"id": "vol_x", "usedBytes": "x"}]}, "volumes"),
    ({"volumes": [{"id": "vol_x", "usedBytes": -5}]}, "volumes"),
    ({"volumes": ["vol_x"]}, "volumes"),
    ({"logs": [{"instanceId": "inst_x", "lines": "not a list"}]}, "logs"),
    ({"logs": [{"instanceId": "inst_x", "lines": [1, 2]}]}, "logs"),
    ({"logs": [{"instanceId": "inst_x", "lines": ["x" * 5001]}]}, "logs"),
    ({"logs": [{"instanceId": "inst_x", "lines": ["x"] * 501}]}, "logs"),
    ({"instances": [{}] * 1001}, "instances"),
    ({"instances": "all"}, "instances"),
    ({"capacity": "4"}, "capacity"),
    ({"sandbox": "bwrap"}, "sandbox"),
    ({"sandbox": {"runner": "x" * 5000}}, "sandbox"),
])
def test_heartbeat_reports_of_the_wrong_type_or_size_are_400(api, workspace, body, field):
    _, token = agent_invite_create(workspace=workspace)
    node = join(api, token).json()
    before = AgentNode.objects.values().get(pk=node["nodeId"])
    resp = beat(api, node, body)
    assert resp.status_code == 400, resp.content
    assert resp.json()["code"] == "validation_error" and field in resp.json()["details"]
    assert AgentNode.objects.values().get(pk=node["nodeId"]) == before  # nothing applied, not even the beat
    assert not RuntimeLogLine.objects.exists() and not Volume.objects.exists()


def test_well_formed_reports_are_applied(api, workspace, runtime_deployment):
    _, token = agent_invite_create(workspace=workspace)
    node = join(api, token).json()
    instance_id = beat(api, node, {}).json()["assignments"][0]["instanceId"]
    report = {"instanceId": instance_id, "status": "crashed", "port": 8080, "pid": 42, "restarts": 3,
              "error": "exited with 1", "memoryPeakBytes": 1024}
    resp = beat(api, node, {"instances": [report], "logs": [{"instanceId": instance_id, "lines": ["  hi  ", ""]}],
                            "capacity": 2, "sandbox": {"runner": "bubblewrap"}})
    assert resp.status_code == 200, resp.content
    instance = Instance.objects.get(pk=instance_id)
    assert (instance.status, instance.port, instance.pid, instance.restarts, instance.error,
            instance.memory_peak_bytes) == ("crashed", 8080, 42, 3, "exited with 1", 1024)
    assert list(RuntimeLogLine.objects.values_list("text", flat=True)) == ["  hi  ", ""]
    assert AgentNode.objects.get(pk=node["nodeId"]).capacity == 2
