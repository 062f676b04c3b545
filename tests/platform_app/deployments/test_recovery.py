"""Builds recover from lost jobs and dead workers: the requeue sweep and the lease-based reaper (beat tasks),
run here eagerly. The same faults with real processes are in tests/slow/faults/test_faults.py."""
import pytest
from django.utils import timezone

from platform_app.models import Deployment
from platform_app.services.deployments.deployments import deployment_lease_renew
from platform_app.tasks.deployments import deployments_reap_stuck, deployments_requeue_stale
from tests.conftest import hosted_repo
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace, settings, tmp_path):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    settings.BUILD_ROOT = tmp_path / "builds"
    settings.BUILD_LEASE_SECONDS = 30
    settings.BUILD_REQUEUE_AFTER_SECONDS = 60
    site = hosted_repo(workspace, "site", {"src/index.html": "<h1>Hello</h1>"})
    return ProjectFactory(workspace=workspace, name="Site", slug="site", git_url=site,
                          build_command="mkdir -p out && cp -r src/. out/", output_directory="out")


def _building(project) -> Deployment:
    """A deployment a worker has claimed, as `_claim` leaves it."""
    return DeploymentFactory(project=project, env="production", branch="main",
                             status=Deployment.Status.BUILDING, started_at=timezone.now())


def test_a_trigger_whose_job_never_reached_the_broker_is_built_by_the_requeue_sweep(
        alice_client, project, django_capture_on_commit_callbacks, travel):
    with django_capture_on_commit_callbacks(execute=False):  # the publish after commit never happens
        resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments", {"env": "production"},
                                 format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "queued"
    url = f"/v1/orgs/acme/deployments/{resp.json()['id']}"

    assert deployments_requeue_stale() == 0  # too recent: its job may still be on its way
    assert alice_client.get(url).json()["status"] == "queued"
    travel(61)
    assert deployments_requeue_stale() == 1
    body = alice_client.get(url).json()
    assert body["status"] == "ready", body["errorMessage"]
    assert deployments_requeue_stale() == 0


def test_a_build_whose_lease_stops_being_renewed_is_ended_in_error(alice_client, project, travel):
    deployment = _building(project)
    deployment_lease_renew(deployment_id=deployment.pk)
    url = f"/v1/orgs/acme/deployments/{deployment.pk}"

    travel(20)
    assert deployments_reap_stuck() == 0
    deployment_lease_renew(deployment_id=deployment.pk)  # the worker is alive
    travel(20)
    assert deployments_reap_stuck() == 0
    assert alice_client.get(url).json()["status"] == "building"

    travel(31)  # no renewal for longer than the lease: the worker is gone
    assert deployments_reap_stuck() == 1
    body = alice_client.get(url).json()
    assert body["status"] == "error" and "no heartbeat" in body["errorMessage"] and body["finishedAt"]
    events = alice_client.get(f"{url}/events").json()["items"]
    assert events[-1]["type"] == "error" and "no heartbeat for 30s" in events[-1]["message"]
    assert deployments_reap_stuck() == 0


def test_a_lease_the_cache_lost_is_judged_one_lease_later(alice_client, project, travel):
    deployment = _building(project)  # no lease in the cache: emptied, or the worker died before renewing
    assert deployments_reap_stuck() == 0  # the reaper starts the clock instead of ending a build it cannot judge
    travel(20)
    deployment_lease_renew(deployment_id=deployment.pk)  # a live worker renews within a lease
    travel(20)
    assert deployments_reap_stuck() == 0
    travel(31)
    assert deployments_reap_stuck() == 1
    assert alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()["status"] == "error"


def test_a_build_past_the_stuck_limit_is_ended_even_while_renewing(alice_client, project, settings, travel):
    settings.BUILD_STUCK_AFTER_SECONDS = 100
    deployment = _building(project)
    travel(101)
    deployment_lease_renew(deployment_id=deployment.pk)
    assert deployments_reap_stuck() == 1
    body = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()
    assert body["status"] == "error" and body["errorMessage"] == "The build stopped reporting and was ended."


def test_a_finished_build_is_neither_reaped_nor_requeued(
        alice_client, project, django_capture_on_commit_callbacks, travel):
    with django_capture_on_commit_callbacks(execute=True):
        resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments", {"env": "production"},
                                 format="json")
    url = f"/v1/orgs/acme/deployments/{resp.json()['id']}"
    assert alice_client.get(url).json()["status"] == "ready"
    travel(600)  # past the lease and the requeue window
    assert deployments_reap_stuck() == 0 and deployments_requeue_stale() == 0
    assert alice_client.get(url).json()["status"] == "ready"
