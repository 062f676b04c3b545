"""Node agents: a Python app template runs on a local agent and answers through the edge."""
import time

import httpx
from django.utils import timezone
import pytest

from platform_app.models import AgentNode, Deployment, Instance, RuntimeLogLine
from platform_app.services.agents.agents import agent_invite_create, agents_expire
from tests.conftest import closing
from tests.platform_app.projects.factories import ProjectFactory


@pytest.fixture
def runtime_project(transactional_db, alice, workspace, settings, tmp_path):
    from platform_app.services.deployments.deployments import deployment_trigger
    from platform_app.services.projects.projects import project_create_from_template

    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    settings.GIT_HOSTED_ROOT = tmp_path / "hosted"
    project = project_create_from_template(workspace=workspace, actor=alice, name="hello-py", template="python-wsgi")
    deployment_trigger(project=project, env="production", branch=None, trigger="api", actor=alice)  # eager build
    deployment = Deployment.objects.get(project=project)
    assert deployment.status == "ready", deployment.error_message
    assert deployment.snapshot["start"]
    return project, deployment


def _wait_for(url_host, base, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        resp = httpx.get(base + "/", headers={"Host": url_host})
        if resp.status_code == 200:
            return resp
        time.sleep(0.2)
    return resp


def test_python_app_runs_on_a_local_agent_and_answers_through_the_edge(live_server, runtime_project, workspace,
                                                                       as_user, alice, tmp_path):
    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    project, deployment = runtime_project
    _, token = agent_invite_create(workspace=workspace)
    runner = Agent.join(server=live_server.url, token=token, name="local", runner=build_runner(),
                        data_dir=tmp_path / "node", capacity=2)
    try:
        body = runner.step()
        assert [a["deploymentId"] for a in body["assignments"]] == [deployment.pk]
        host = f"{project.slug}-{deployment.pk[4:12]}.localhost"
        assert httpx.get(live_server.url + "/", headers={"Host": host}).status_code == 503  # not reported yet
        runner.step()  # reports the instance running on its port
        resp = _wait_for(host, live_server.url)
        assert resp.status_code == 200 and resp.text == "Hello from a Python WSGI app\n"
        assert httpx.get(live_server.url + "/health", headers={"Host": f"{project.slug}.localhost"}).json() == \
            {"status": "ok"}
        runner.step()  # forwards the app's output
        client = as_user(alice)
        instances = client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/instances").json()["items"]
        assert instances[0]["status"] == "running" and instances[0]["port"]
        logs = client.get(f"/v1/orgs/acme/projects/{project.pk}/runtime-logs?lines=50").json()["lines"]
        assert any("GET / HTTP" in line["text"] for line in logs)
        nodes = client.get("/v1/orgs/acme/agents").json()["items"]
        assert nodes[0]["running"] == 1
    finally:
        pids = [inst.sandboxed.pid for inst in runner.instances.values()]
        runner.leave()
    assert AgentNode.objects.get().status == "left"
    assert Instance.objects.get().status == "stopped"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            __import__("os").kill(pid, 0)
    assert RuntimeLogLine.objects.exists()


def test_join_token_is_single_use_and_heartbeats_need_the_node_token(live_server, transactional_db, workspace, api):
    _, token = agent_invite_create(workspace=workspace)
    body = {"token": token, "name": "n1", "runtimes": ["process"]}
    first = api.post("/v1/agents/join", body, format="json")
    assert first.status_code == 200
    again = api.post("/v1/agents/join", body, format="json")
    assert again.status_code == 401 and again.json()["code"] == "invalid_join_token"
    node_id = first.json()["nodeId"]
    assert api.post(f"/v1/agents/{node_id}/heartbeat", {}, format="json",
                    HTTP_AUTHORIZATION="Bearer agn_wrong").status_code == 401
    ok = api.post(f"/v1/agents/{node_id}/heartbeat", {}, format="json",
                  HTTP_AUTHORIZATION=f"Bearer {first.json()['nodeToken']}")
    assert ok.status_code == 200 and ok.json()["assignments"] == []


def test_silent_nodes_go_offline(transactional_db, workspace, travel):
    from platform_app.services.agents.agents import agent_join

    _, token = agent_invite_create(workspace=workspace)
    agent_join(token=token, name="n", runtimes=["process"], capacity=1, host="127.0.0.1")
    travel(60)
    assert agents_expire() == 1
    assert AgentNode.objects.get().status == "offline"


@pytest.mark.parametrize("source, body, code, field", [
    ("git", {"env": "no-such-env", "imageRef": "registry.example.com/app:1"}, "unknown_environment", "env"),
    ("image", {"env": "no-such-env"}, "unknown_environment", "env"),
    ("git", {}, "validation_error", "imageRef"),
])
def test_an_image_deployment_is_checked_as_a_deployment_is(alice_client, workspace, source, body, code, field):
    project = ProjectFactory(workspace=workspace, name="Img", slug="img", source=source,
                             image_ref="registry.example.com/team/app:1.2" if source == "image" else "")
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments/image", body, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == code and field in resp.json()["details"]
    assert not Deployment.objects.exists()


def test_image_deployment_without_a_node_running_images_ends_in_error(alice_client, workspace):
    project = ProjectFactory(workspace=workspace, name="Img", slug="img", source="image",
                             image_ref="registry.example.com/team/app:1.2", git_url="")
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments/image", {}, format="json")
    assert resp.status_code == 201
    assert resp.json()["status"] == "error" and "`image` runtime" in resp.json()["errorMessage"]
    assert Deployment.objects.get().error_message == resp.json()["errorMessage"]


def test_a_waiting_heartbeat_answers_with_a_deployment_placed_on_its_node_while_it_waits(transactional_db, workspace,
                                                                                        alice, api, as_user):
    """A node's heartbeat is a long poll: a deployment that production starts serving while it waits (here a
    rollback) is placed at once and answered to the waiting heartbeat, not to the next one."""
    import threading

    from tests.platform_app.deployments.factories import DeploymentFactory

    project = ProjectFactory(workspace=workspace, name="Svc", slug="svc")
    earlier = DeploymentFactory(project=project, env="production", status="ready", ready_at=timezone.now(),
                                snapshot={"start": "python app.py"}, artifact_sha256="0" * 64)
    _, token = agent_invite_create(workspace=workspace)
    joined = api.post("/v1/agents/join", {"token": token, "name": "n1", "runtimes": ["process"], "capacity": 2},
                      format="json").json()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {joined['nodeToken']}"}
    url = f"/v1/agents/{joined['nodeId']}/heartbeat"
    assert api.post(url, {"wait": 0}, format="json", **auth).json()["assignments"] == []  # nothing is served yet
    answers = []
    waiting = threading.Thread(target=closing(lambda: answers.append(api.post(url, {"wait": 20}, format="json",
                                                                              **auth))))
    waiting.start()
    time.sleep(0.5)  # the heartbeat is waiting now (it answered nothing new)
    resp = as_user(alice).post(f"/v1/orgs/acme/projects/{project.pk}/rollback", {"deploymentId": earlier.pk},
                               format="json")
    assert resp.status_code == 201, resp.content
    waiting.join(30)
    assert answers[0].status_code == 200
    assert [a["deploymentId"] for a in answers[0].json()["assignments"]] == [earlier.pk]
    assert Instance.objects.get().node_id == joined["nodeId"]


def test_a_waiting_heartbeat_holds_no_database_connection_between_its_looks(transactional_db, workspace, api):
    """Every node's heartbeat is a long poll, so each holding a connection for its wait would let a few dozen nodes
    take all the web processes' connections: it gives its connection back while it sleeps, and each look (every
    HEARTBEAT_POLL_SECONDS) takes one again."""
    import threading

    from django.db.backends.signals import connection_created

    _, token = agent_invite_create(workspace=workspace)
    joined = api.post("/v1/agents/join", {"token": token, "name": "n1", "runtimes": ["process"]}, format="json").json()
    answers, opened = [], []

    def heartbeat():
        answers.append(api.post(f"/v1/agents/{joined['nodeId']}/heartbeat", {"wait": 1.5}, format="json",
                                HTTP_AUTHORIZATION=f"Bearer {joined['nodeToken']}"))

    def count(sender, connection, **kwargs):
        if threading.current_thread() is waiting:
            opened.append(connection)

    waiting = threading.Thread(target=closing(heartbeat))
    connection_created.connect(count)
    try:
        waiting.start()
        waiting.join(15)
    finally:
        connection_created.disconnect(count)
    assert answers[0].status_code == 200 and answers[0].json()["assignments"] == []
    assert len(opened) >= 4, opened  # six looks in 1.5 s; one connection held throughout before


def test_a_node_holds_one_waiting_heartbeat_at_a_time(transactional_db, workspace, api):
    """A node's token is the tenant's: heartbeats it sends side by side do not each hold a web thread for their
    wait. The first waits; one sent meanwhile answers at once; once the first has answered, the next may wait."""
    import threading

    _, token = agent_invite_create(workspace=workspace)
    joined = api.post("/v1/agents/join", {"token": token, "name": "n1", "runtimes": ["process"]}, format="json").json()
    finished = []

    def heartbeat(name, wait):
        resp = api.post(f"/v1/agents/{joined['nodeId']}/heartbeat", {"wait": wait}, format="json",
                        HTTP_AUTHORIZATION=f"Bearer {joined['nodeToken']}")
        finished.append((name, resp.status_code))

    first = threading.Thread(target=closing(heartbeat), args=("first", 3))
    first.start()
    time.sleep(0.5)  # the first is waiting now
    heartbeat("second", 3)
    assert finished == [("second", 200)]  # answered while the first still waits
    first.join(15)
    assert finished == [("second", 200), ("first", 200)]
    third = threading.Thread(target=closing(heartbeat), args=("third", 1))
    third.start()
    time.sleep(0.3)
    assert finished == [("second", 200), ("first", 200)]  # the node's one waiting heartbeat again
    third.join(15)
    assert finished[-1] == ("third", 200)


@pytest.mark.parametrize("wait", [-1, 26, "soon"])
def test_a_heartbeats_wait_is_bounded(transactional_db, workspace, api, wait):
    _, token = agent_invite_create(workspace=workspace)
    joined = api.post("/v1/agents/join", {"token": token, "name": "n1", "runtimes": ["process"]}, format="json").json()
    resp = api.post(f"/v1/agents/{joined['nodeId']}/heartbeat", {"wait": wait}, format="json",
                    HTTP_AUTHORIZATION=f"Bearer {joined['nodeToken']}")
    assert resp.status_code == 400 and "wait" in resp.json()["details"]


def test_placement_reads_the_deployments_nodes_run_through_their_own_index(db, workspace):
    """Placement runs at every node's heartbeat: it reads the ready deployments that run on nodes (a start command
    or an image), through a partial index, never every static deployment the workspace ever built."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from platform_app.models import Deployment
    from platform_app.models.deployments import RUNS_ON_NODES
    from platform_app.services.agents.agents import instances_place, is_runtime
    from tests.platform_app.agents.factories import AgentNodeFactory
    from tests.platform_app.deployments.factories import DeploymentFactory

    project = ProjectFactory(workspace=workspace, name="Svc", slug="svc")
    for static in ({}, {"start": ""}, {"start": None}):  # a build's snapshot names `start`, empty for a static site
        DeploymentFactory(project=project, env="production", status="ready", ready_at=timezone.now(), snapshot=static)
    runs = DeploymentFactory(project=project, env="production", status="ready", ready_at=timezone.now(),
                             snapshot={"start": "python app.py"}, artifact_sha256="0" * 64)
    project.production_deployment = runs
    project.save(update_fields=["production_deployment"])
    AgentNodeFactory(workspace=workspace, runtimes=["process"], status="online", capacity=10)
    with CaptureQueriesContext(connection) as queries:
        instances_place(workspace=workspace)
    assert [i.deployment_id for i in Instance.objects.all()] == [runs.pk]
    image = DeploymentFactory(project=project, env="preview", status="ready", snapshot={"imageDigest": "sha256:0"})
    # the index's rule in SQL is agents.is_runtime
    assert set(Deployment.objects.filter(RUNS_ON_NODES).values_list("pk", flat=True)) == {runs.pk, image.pk} == {
        d.pk for d in Deployment.objects.all() if is_runtime(d)}
    image.delete()
    for n in range(3):  # more running instances cost the next placement no query each
        other = ProjectFactory(workspace=workspace, name=f"Svc{n}", slug=f"svc{n}")
        other.production_deployment = DeploymentFactory(project=other, env="production", status="ready",
                                                        ready_at=timezone.now(), snapshot={"start": "x"})
        other.save(update_fields=["production_deployment"])
    instances_place(workspace=workspace)
    with CaptureQueriesContext(connection) as again:
        instances_place(workspace=workspace)
    assert Instance.objects.count() == 4 and len(again) <= len(queries) - 1, [q["sql"] for q in again]
    ready = [q["sql"] for q in queries if 'FROM "platform_app_deployment"' in q["sql"] and "snapshot" in q["sql"]]
    assert len(ready) == 1, [q["sql"] for q in queries]
    if connection.vendor == "postgresql":  # the plan, with sequential scans priced out (a few rows here)
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {ready[0]}")
            assert "deployment_runtime_ready" in "\n".join(row[0] for row in cursor.fetchall())


def test_a_builder_slot_whose_claim_was_not_held_asks_again_later_not_at_once(httpserver, tmp_path):
    """Past its node's waiting claims (BUILD_CLAIM_WAITS_PER_NODE) the platform answers a claim at once with no
    job: the slot then waits before it asks again instead of spinning on the platform."""
    import threading

    from platform_app.nodes.agent import Agent
    from platform_app.nodes.client import PlatformClient
    from platform_app.services.deployments.build_jobs import build_runner

    httpserver.expect_request("/v1/agents/node_b/builds/claim", method="POST").respond_with_data("", status=204)
    agent = Agent(PlatformClient(httpserver.url_for("/"), "node_b", "agn_b"), runner=build_runner(),
                  data_dir=tmp_path / "node", build_slots=1, claim_wait=20)
    stopping = threading.Event()
    slot = threading.Thread(target=agent.build_loop, args=(stopping,))
    slot.start()
    time.sleep(1.0)
    stopping.set()
    slot.join(10)
    assert not slot.is_alive() and len(httpserver.log) == 1  # one claim in the second, not one per round trip
