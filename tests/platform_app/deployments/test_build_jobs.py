"""Build jobs through the builders' routes: claims (long poll, one winner, a workspace's builder keeps to its
workspace), the job's token, expiry when no builder comes, and what a node may download."""
import pytest

from platform_app.models import BuildJob, Deployment
from platform_app.tasks.deployments import deployments_reap_stuck
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.deployments.factories import BuildJobFactory, DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def _claim(api, node, raw, wait=0):
    return api.post(f"/v1/agents/{node.pk}/builds/claim", {"wait": wait}, format="json",
                    HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_a_platform_builder_claims_the_oldest_job_once(api, workspace):
    first = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    second = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    builder = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_builder")
    resp = _claim(api, builder, "agn_builder")
    assert resp.status_code == 200
    job = resp.json()
    assert job["id"] == first.pk and job["token"].startswith("bld_") and job["commands"] == []
    assert set(job["limits"]) == {"memory", "cpu", "processes", "disk", "share"} and job["egress"]["egress"] is True
    assert BuildJob.objects.get(pk=first.pk).state == "claimed"
    assert BuildJob.objects.get(pk=first.pk).token_hash not in job["token"]
    assert _claim(api, builder, "agn_builder").json()["id"] == second.pk
    assert _claim(api, builder, "agn_builder").status_code == 204  # nothing left, after waiting `wait`


def test_a_workspace_builder_builds_only_its_workspace(api, workspace, charlie):
    from platform_app.models import Workspace

    BuildJobFactory(deployment__project=ProjectFactory(workspace=Workspace.objects.get(slug="charlies")))
    mine = AgentNodeFactory(workspace=workspace, runtimes=["process", "build"], raw="agn_mine")
    assert _claim(api, mine, "agn_mine").status_code == 204
    runner = AgentNodeFactory(workspace=workspace, runtimes=["process"], raw="agn_runner")
    refused = _claim(api, runner, "agn_runner")
    assert refused.status_code == 409 and refused.json()["code"] == "not_a_builder"
    assert _claim(api, mine, "agn_wrong").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_a_node_holds_at_most_its_waiting_claims_at_a_time(api, settings):
    """A node's token is the tenant's: its claims sent side by side wait BUILD_CLAIM_WAITS_PER_NODE at a time, and
    any other answers at once instead of holding a web thread too; a claim still takes a job that is there."""
    import threading
    import time

    from tests.conftest import closing

    settings.BUILD_CLAIM_WAITS_PER_NODE = 2
    builder = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_b")
    finished = []

    def claim(name, wait):
        finished.append((name, _claim(api, builder, "agn_b", wait=wait).status_code))

    waiting = [threading.Thread(target=closing(claim), args=(name, 3)) for name in ("first", "second")]
    for thread in waiting:
        thread.start()
    time.sleep(0.6)  # both are waiting now
    started = time.monotonic()
    claim("third", 3)
    assert finished == [("third", 204)] and time.monotonic() - started < 1.5  # answered while the two wait
    for thread in waiting:
        thread.join(15)
    assert sorted(finished[1:]) == [("first", 204), ("second", 204)]
    job = BuildJobFactory(deployment__project=ProjectFactory())
    resp = _claim(api, builder, "agn_b", wait=3)
    assert resp.status_code == 200 and resp.json()["id"] == job.pk
    assert BuildJob.objects.get(pk=job.pk).state == "claimed"


@pytest.mark.parametrize("wait", [-1, 26, "soon"])
def test_claim_wait_is_bounded(api, wait):
    builder = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_b")
    resp = _claim(api, builder, "agn_b", wait=wait)
    assert resp.status_code == 400 and "wait" in resp.json()["details"]


def test_a_canceled_build_is_not_handed_out_and_a_running_one_is_told_to_stop(api, alice_client, workspace):
    job = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    builder = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_b")
    token = _claim(api, builder, "agn_b").json()["token"]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert alice_client.post(f"/v1/orgs/acme/deployments/{job.pk}/cancel").status_code == 201
    answer = api.post(f"/v1/builds/{job.pk}/logs", {"lines": [{"text": "still going", "stream": "build"}]},
                      format="json", **auth)
    assert answer.json() == {"canceled": True}
    assert api.post(f"/v1/builds/{job.pk}/finish", {"status": "canceled"}, format="json", **auth).json() == \
        {"status": "canceled"}
    pending = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    alice_client.post(f"/v1/orgs/acme/deployments/{pending.pk}/cancel")
    assert _claim(api, builder, "agn_b").status_code == 204


def test_finishing_ready_without_an_upload_is_an_error(api, workspace):
    job = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_b", pk="node_builder")
    token = _claim(api, AgentNodeFactory._meta.model.objects.get(pk="node_builder"), "agn_b").json()["token"]
    resp = api.post(f"/v1/builds/{job.pk}/finish", {"status": "ready", "sandbox": {"runner": "bubblewrap"}},
                    format="json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 200 and resp.json() == {"status": "error"}
    deployment = Deployment.objects.get(pk=job.pk)
    assert deployment.error_message == "The builder finished without uploading the output."
    again = api.post(f"/v1/builds/{job.pk}/finish", {"status": "ready"}, format="json",
                     HTTP_AUTHORIZATION=f"Bearer {token}")
    assert again.json() == {"status": "error"}  # finishing twice changes nothing
    bad = api.post(f"/v1/builds/{job.pk}/finish", {"status": "done"}, format="json",
                   HTTP_AUTHORIZATION=f"Bearer {token}")
    assert bad.status_code == 400


def test_a_build_no_builder_takes_ends_in_error(workspace, settings, travel):
    settings.BUILD_CLAIM_TIMEOUT_SECONDS = 60
    job = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    assert deployments_reap_stuck() == 0  # waiting for a builder holds no lease: not reaped as a dead worker
    travel(61)
    assert deployments_reap_stuck() == 1
    deployment = Deployment.objects.get(pk=job.pk)
    assert deployment.status == "error" and "No builder took this build within 60s" in deployment.error_message
    assert BuildJob.objects.get(pk=job.pk).state == "done"


def test_a_node_downloads_only_artifacts_of_what_it_runs(api, workspace):
    running = InstanceFactory(deployment__project=ProjectFactory(workspace=workspace), status="running",
                              node__raw="agn_node")
    other = DeploymentFactory(project=running.deployment.project, status="ready")
    url = f"/v1/agents/{running.node_id}/artifacts/{other.pk}"
    resp = api.get(url, HTTP_AUTHORIZATION="Bearer agn_node")
    assert resp.status_code == 404 and resp.json()["code"] == "not_found"
    assert api.get(url, HTTP_AUTHORIZATION="Bearer agn_wrong").status_code == 401


def test_a_job_whose_builder_went_away_before_starting_goes_back_to_the_queue(api, workspace, settings, travel):
    from platform_app.models import LogLine

    settings.BUILD_LEASE_SECONDS = 5
    job = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    gone = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_gone", name="gone")
    assert _claim(api, gone, "agn_gone").status_code == 200  # ... and its process stopped there
    travel(6)
    assert deployments_reap_stuck() == 1
    assert BuildJob.objects.get(pk=job.pk).state == "pending"
    assert Deployment.objects.get(pk=job.pk).status == "building"
    assert LogLine.objects.filter(deployment_id=job.pk, text__startswith="Builder gone went away").exists()
    other = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_other")
    assert _claim(api, other, "agn_other").json()["id"] == job.pk


def test_a_node_that_left_takes_no_job(api, workspace):
    BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace))
    left = AgentNodeFactory(workspace=None, runtimes=["build"], raw="agn_left", status="left")
    assert _claim(api, left, "agn_left").status_code == 401
