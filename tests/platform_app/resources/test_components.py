"""Components: a project's services, each deployed on its own, run as sandboxed instances of its size on the
workspace's agents; rolled out without a gap, restarted when they exit, `crashed` when they keep exiting; volumes
that survive a restart and that no other project sees."""
import textwrap
import time

import httpx
import pytest

from platform_app.models import Component, Deployment, Instance
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.resources.factories import ComponentFactory, VolumeFactory
from tests.platform_app.sandbox.conftest import log_text

APP = textwrap.dedent('''\
    import os
    from wsgiref.simple_server import make_server

    VERSION = open("version.txt").read().strip()

    def app(environ, start):
        path = environ["PATH_INFO"]
        if path == "/count" and os.path.isdir("/data"):
            count = int(open("/data/count").read()) + 1 if os.path.exists("/data/count") else 1
            open("/data/count", "w").write(str(count))
            body = str(count)
        elif path == "/data":
            body = ",".join(sorted(os.listdir("/data"))) if os.path.isdir("/data") else "no /data here"
        else:
            body = VERSION
        start("200 OK", [("Content-Type", "text/plain")])
        return [body.encode()]

    make_server("0.0.0.0", int(os.environ["PORT"]), app).serve_forever()
    ''')
BUILD = "date +%s%N > version.txt"


def _url(project, tail=""):
    return f"/v1/orgs/acme/projects/{project.pk}/components{tail}"


@pytest.mark.django_db
def test_instance_sizes_are_listed(alice_client, settings):
    items = alice_client.get("/v1/instance-sizes").json()["items"]
    assert [i["id"] for i in items] == list(settings.INSTANCE_SIZES)
    assert items[0] == {"id": "starter", "cpu": 0.25, "memoryMb": 256, "pricePerHour": 1, "currency": "usd"}


@pytest.mark.django_db
def test_a_component_is_created_changed_and_deleted(alice_client, make_project):
    project = make_project("svc", {"app.py": APP})
    resp = alice_client.post(_url(project), {"name": "api", "kind": "web", "startCommand": "python3 app.py",
                                            "instanceSize": "standard", "instances": 2}, format="json")
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["status"] == "idle" and body["healthCheckPath"] == "/" and body["instances"] == 2
    assert body["url"] == "http://api--svc.localhost:8000/"
    changed = alice_client.patch(_url(project, f"/{body['id']}"), {"instances": 1, "instanceSize": "pro"},
                                 format="json")
    assert changed.status_code == 200 and changed.json()["instanceSize"] == "pro"
    assert [c["name"] for c in alice_client.get(_url(project)).json()["items"]] == ["api"]
    assert alice_client.delete(_url(project, f"/{body['id']}")).status_code == 200
    assert not Component.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("body,status,code", [
    ({"name": "api", "kind": "web"}, 400, "validation_error"),                       # no start command
    ({"name": "api", "kind": "worker", "startCommand": "x", "instanceSize": "huge"}, 400, "validation_error"),
    ({"name": "Api!", "kind": "web", "startCommand": "x"}, 400, "validation_error"),
    ({"name": "api", "kind": "cron", "startCommand": "x"}, 400, "validation_error"),
    ({"name": "api", "kind": "web", "startCommand": "x", "healthCheckPath": "health"}, 400, "validation_error"),
    ({"name": "api", "kind": "web", "startCommand": "x", "instances": 4}, 402, "plan_limit"),  # free: 3
    ({"name": "api", "kind": "web", "startCommand": "x", "replicas": 2}, 400, "validation_error"),
])
def test_bad_components_are_refused_and_nothing_is_made(alice_client, make_project, body, status, code):
    project = make_project("bad", {"app.py": APP})
    resp = alice_client.post(_url(project), body, format="json")
    assert resp.status_code == status, resp.content
    assert resp.json()["code"] == code and not Component.objects.exists()


@pytest.mark.django_db
def test_the_plan_counts_every_component_of_the_workspace(alice_client, make_project, workspace):
    ComponentFactory(project=make_project("one", {"app.py": APP}), instances=2)
    resp = alice_client.post(_url(make_project("two", {"app.py": APP})), {"name": "api", "kind": "worker",
                                                                          "startCommand": "x", "instances": 2},
                             format="json")
    assert resp.status_code == 402 and resp.json()["details"] == {"plan": "free", "limit": 3, "used": 2}
    workspace.plan = "pro"
    workspace.save()
    assert alice_client.post(_url(make_project("three", {"app.py": APP})), {"name": "api", "kind": "worker",
                                                                            "startCommand": "x", "instances": 2},
                             format="json").status_code == 201


@pytest.mark.django_db
def test_volumes_rules(alice_client, make_project):
    component = ComponentFactory(project=make_project("vols", {"app.py": APP}), instances=1)
    url = _url(component.project, f"/{component.pk}/volumes")
    for bad in ({"name": "d", "mountPath": "/etc", "sizeGb": 1}, {"name": "d", "mountPath": "data", "sizeGb": 1},
                {"name": "d", "mountPath": "/data", "sizeGb": 0}, {"name": "d", "mountPath": "/tmp/x", "sizeGb": 1}):
        assert alice_client.post(url, bad, format="json").status_code == 400, bad
    made = alice_client.post(url, {"name": "data", "mountPath": "/data", "sizeGb": 2}, format="json")
    assert made.status_code == 201 and made.json()["usedBytes"] == 0 and made.json()["nodeId"] is None
    assert alice_client.post(url, {"name": "data", "mountPath": "/other", "sizeGb": 1},
                             format="json").status_code == 409
    more = alice_client.patch(_url(component.project, f"/{component.pk}"), {"instances": 2}, format="json")
    assert more.status_code == 409 and more.json()["code"] == "volume_single_instance"
    Instance.objects.create(deployment=Deployment.objects.create(project=component.project, branch="main"),
                            node=__import__("tests.platform_app.agents.factories", fromlist=["x"]).AgentNodeFactory(
                                workspace=component.project.workspace), component=component, status="running")
    refused = alice_client.delete(f"{url}/{made.json()['id']}")
    assert refused.status_code == 409 and refused.json()["code"] == "component_running"


def _deploy(client, project, component_id):
    from django.test.testcases import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        resp = client.post(_url(project, f"/{component_id}/deploy"))
    assert resp.status_code == 201, resp.content
    deployment = Deployment.objects.get(pk=resp.json()["id"])
    assert deployment.status == "ready", log_text(deployment)
    return deployment


def _until(predicate, agent, timeout=40.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        agent.step()
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("never happened")


@pytest.mark.django_db(transaction=True)
def test_a_web_component_rolls_out_without_a_gap_and_a_crashing_one_is_crashed(
        live_server, sandbox, alice, workspace, as_user, make_project, tmp_path, settings):
    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    settings.INSTANCE_MAX_RESTARTS = 1
    client = as_user(alice)
    project = make_project("shop", {"app.py": APP}, output_directory=".")
    web = client.post(_url(project), {"name": "web", "kind": "web", "startCommand": "python3 app.py",
                                      "buildCommand": BUILD, "instances": 2}, format="json").json()
    worker = client.post(_url(project), {"name": "jobs", "kind": "worker", "startCommand": "echo failing; exit 3",
                                         "instances": 1}, format="json").json()
    first = _deploy(client, project, web["id"])
    _deploy(client, project, worker["id"])
    assert Deployment.objects.get(pk=first.pk).snapshot["start"] == "python3 app.py"
    agent = Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name="node",
                       runner=build_runner(), data_dir=tmp_path / "node", capacity=6)
    hosts = [{"Host": "web--shop.localhost"}, {"Host": "shop.localhost"}]  # its own address, and the project's
    try:
        def served():
            resp = httpx.get(live_server.url + "/", headers=hosts[0])
            return resp.status_code == 200 and resp.text

        v1 = _until(served, agent)
        assert httpx.get(live_server.url + "/", headers=hosts[1]).text == v1
        _until(lambda: client.get(_url(project)).json()["items"][0]["status"] == "running", agent)
        assert Instance.objects.filter(component_id=web["id"], status="running").count() == 2

        second = _deploy(client, project, web["id"])
        answers = set()
        for _ in range(150):  # the old instances answer until the new ones are healthy: never a gap
            agent.step()
            resp = httpx.get(live_server.url + "/", headers=hosts[0])
            assert resp.status_code == 200, resp.text
            answers.add(resp.text)
            if Instance.objects.filter(deployment=first, status__in=("assigned", "starting", "running")).count() == 0:
                break
            time.sleep(0.1)
        v2 = httpx.get(live_server.url + "/", headers=hosts[0]).text
        assert v2 != v1 and answers <= {v1, v2}
        assert Instance.objects.filter(deployment=second, status="running").count() == 2

        status = _until(lambda: (s := client.get(_url(project)).json()["items"][1]["status"]) == "crashed" and s,
                        agent)
        assert status == "crashed"
        crashed = Instance.objects.get(component_id=worker["id"])
        assert crashed.status == "crashed" and "exited with 3" in crashed.error and crashed.restarts == 2
    finally:
        agent.leave()


@pytest.mark.django_db(transaction=True)
def test_a_volume_keeps_its_files_across_restarts_and_no_other_project_sees_them(
        live_server, sandbox, alice, workspace, as_user, make_project, tmp_path):
    from platform_app.models import Volume
    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    client = as_user(alice)
    project, other = make_project("counter", {"app.py": APP}), make_project("nosy", {"app.py": APP})
    made = []
    for p in (project, other):
        made.append(client.post(_url(p), {"name": "web", "kind": "web", "startCommand": "python3 app.py",
                                          "buildCommand": BUILD}, format="json").json())
    volume = client.post(_url(project, f"/{made[0]['id']}/volumes"), {"name": "data", "mountPath": "/data",
                                                                      "sizeGb": 1}, format="json").json()
    for p, component in zip((project, other), made):
        _deploy(client, p, component["id"])
    agent = Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name="node",
                       runner=build_runner(), data_dir=tmp_path / "node", capacity=4)
    mine, nosy = {"Host": "web--counter.localhost"}, {"Host": "web--nosy.localhost"}
    try:
        def count():
            resp = httpx.get(live_server.url + "/count", headers=mine)
            return resp.status_code == 200 and resp.text

        assert _until(count, agent) == "1"
        assert httpx.get(live_server.url + "/count", headers=mine).text == "2"
        assert Volume.objects.get(pk=volume["id"]).node_id == agent.node_id  # pinned where it was first placed
        url = _url(project, f"/{made[0]['id']}")
        refused = client.delete(f"{url}/volumes/{volume['id']}")
        assert refused.status_code == 409  # its component runs
        client.patch(url, {"instances": 0}, format="json")  # stop it...
        _until(lambda: not Instance.objects.filter(component_id=made[0]["id"],
                                                   status__in=("assigned", "starting", "running")).exists(), agent)
        client.patch(url, {"instances": 1}, format="json")  # ...and start a new instance
        assert _until(count, agent) == "3"  # the file outlived the instance that wrote it
        seen = _until(lambda: (r := httpx.get(live_server.url + "/data", headers=nosy)).status_code == 200 and r.text,
                      agent)
        assert seen == "no /data here"
        _until(lambda: client.get(url + "/volumes").json()["items"][0]["usedBytes"] > 0 or agent.__setattr__(
            "_volumes_measured", float("-inf")), agent)
    finally:
        agent.leave()


# The plan, again at deploy and at placement ---------------------------------------------------------------------

@pytest.mark.django_db
def test_deploying_a_component_over_the_plan_is_refused(alice_client, make_project, workspace):
    workspace.plan = "pro"
    workspace.save()
    project = make_project("big", {"app.py": APP})
    made = alice_client.post(_url(project), {"name": "api", "kind": "worker", "startCommand": "python3 app.py",
                                             "instances": 5}, format="json")
    assert made.status_code == 201, made.content
    workspace.plan = "free"  # a downgrade: the plan now runs 3
    workspace.save()
    resp = alice_client.post(_url(project, f"/{made.json()['id']}/deploy"))
    assert resp.status_code == 402, resp.content
    assert resp.json()["code"] == "plan_limit" and resp.json()["details"] == {"plan": "free", "limit": 3, "used": 0}
    assert not Deployment.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_deploying_a_component_of_an_unknown_size_is_refused(alice_client, make_project):
    component = ComponentFactory(project=make_project("odd", {"app.py": APP}), instance_size="mega-x")
    resp = alice_client.post(_url(component.project, f"/{component.pk}/deploy"))
    assert resp.status_code == 400 and "instanceSize" in resp.json()["details"], resp.content
    assert not Deployment.objects.filter(project=component.project).exists()


@pytest.mark.django_db
def test_placement_never_exceeds_the_plan_nor_places_an_unknown_size(api, workspace, caplog):
    from tests.platform_app.agents.factories import AgentNodeFactory
    from tests.platform_app.deployments.factories import DeploymentFactory
    from tests.platform_app.projects.factories import ProjectFactory

    project = ProjectFactory(workspace=workspace)

    def deployed(**fields):  # a component as stored data may hold it, deployed
        component = ComponentFactory(project=project, **fields)
        component.deployment = DeploymentFactory(project=project, component=component, status="ready",
                                                 snapshot={"start": "python3 app.py"})
        component.save()
        return component

    odd = deployed(instance_size="mega-x", instances=1)
    big = deployed(instances=100000)
    node = AgentNodeFactory(workspace=workspace, raw="agn_placement", runtimes=["process"], capacity=50)
    for _ in range(2):
        resp = api.post(f"/v1/agents/{node.pk}/heartbeat", {}, format="json",
                        HTTP_AUTHORIZATION="Bearer agn_placement")
        assert resp.status_code == 200, resp.content
        assert len(resp.json()["assignments"]) == 3  # the free plan's 3
    live = Instance.objects.filter(status__in=("assigned", "starting", "running"))
    assert live.count() == 3 and set(live.values_list("component", flat=True)) == {big.pk}
    assert not Instance.objects.filter(component=odd).exists()
    assert "mega-x" in caplog.text
