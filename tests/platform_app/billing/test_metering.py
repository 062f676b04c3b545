"""Metering: builds, instances by size, storage and the edge's counters become usage records per workspace,
project, hour and meter; running an hour again never counts twice; the agent's heartbeat carries each instance's
memory peak; the edge counts the bytes it serves and which deployments it served."""
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from platform_app.models import Deployment, DeploymentVisit, Instance, Price, UsageRecord
from platform_app.services.automation import edge_metrics
from platform_app.services.billing.metering import usage_hour_record
from platform_app.services.billing.meters import hour_floor
from platform_app.tasks.billing import usage_meter
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.factories import ComponentFactory, VolumeFactory

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)


@pytest.fixture
def hour(time_machine):
    """The start of the last finished hour, the clock past its BILLING_METER_SETTLE_SECONDS (archives wait for
    them; in a run's first minute of an hour, the clock moves a little ahead)."""
    now = timezone.now()
    if now - hour_floor(now) < timedelta(minutes=2):
        time_machine.move_to(hour_floor(now) + timedelta(minutes=2), tick=True)
    return hour_floor(now) - H


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, slug="shop", name="Shop")


def usage(**filters) -> dict:
    return {(r.project_ref, r.hour, r.meter): r.quantity for r in UsageRecord.objects.filter(**filters)}


def test_builds_are_split_across_the_hours_they_ran(project, hour):
    DeploymentFactory(project=project, status="ready", started_at=hour - timedelta(minutes=20),
                      finished_at=hour + timedelta(minutes=10))
    DeploymentFactory(project=project, status="queued")  # never started: nothing
    usage_hour_record(hour=hour - H)
    usage_hour_record(hour=hour)
    assert usage(meter="build_seconds") == {(project.pk, hour - H, "build_seconds"): 1200,
                                            (project.pk, hour, "build_seconds"): 600}
    record = UsageRecord.objects.get(hour=hour)
    assert record.workspace_id == project.workspace_id and record.project_name == "Shop"


def test_instances_count_their_running_time_by_size(project, hour, workspace):
    node = AgentNodeFactory(workspace=workspace)
    component = ComponentFactory(project=project, instance_size="pro")
    deployment = DeploymentFactory(project=project, status="ready")
    InstanceFactory(deployment=deployment, node=node, component=component, status="running",
                    created_at=hour - timedelta(minutes=30))
    InstanceFactory(deployment=deployment, node=node, status="running", created_at=hour + timedelta(minutes=45))
    InstanceFactory(deployment=deployment, node=node, component=component, status="stopped",
                    created_at=hour - timedelta(hours=5), updated_at=hour + timedelta(minutes=15))
    InstanceFactory(deployment=deployment, node=node, status="stopped", created_at=hour - timedelta(hours=5),
                    updated_at=hour - timedelta(minutes=1))  # ended before the hour
    usage_hour_record(hour=hour)
    assert usage() == {(project.pk, hour, "instance_seconds:pro"): 3600 + 900,
                       (project.pk, hour, "instance_seconds:default"): 900}


def test_storage_counts_archives_and_volumes_as_byte_hours(project, hour):
    DeploymentFactory(project=project, status="ready", artifact_bytes=3_000_000, finished_at=hour - H,
                      created_at=hour - H)
    DeploymentFactory(project=project, status="ready", artifact_bytes=1_000_000, finished_at=hour + 30 * (H / 60),
                      created_at=hour)
    VolumeFactory(component=ComponentFactory(project=project), size_gb=2, created_at=hour - H)
    usage_hour_record(hour=hour)
    assert usage() == {(project.pk, hour, "storage_artifacts"): 3_000_000 + 500_000,
                       (project.pk, hour, "storage_volumes"): 2 * 1024 ** 3}


def test_storage_is_metered_in_bounded_batches_of_projects_until_the_hour_is_complete(workspace, hour, settings):
    settings.BILLING_METER_STORAGE_BATCH = 2
    projects = [ProjectFactory(workspace=workspace, slug=f"p{i}") for i in range(5)]
    for i, project in enumerate(projects):
        DeploymentFactory(project=project, status="ready", artifact_bytes=1000 * (i + 1), finished_at=hour - H,
                          created_at=hour - H)
    DeploymentFactory(project=projects[4], status="ready", artifact_bytes=600, created_at=hour,
                      finished_at=hour + 30 * (H / 60))  # ended within the hour: half of it
    DeploymentFactory(project=ProjectFactory(workspace=workspace, slug="zz"), status="ready", artifact_bytes=10,
                      created_at=hour + 59 * (H / 60), finished_at=hour + 61 * (H / 60))  # kept from the next hour
    written = [usage_hour_record(hour=hour) for _ in range(4)]
    assert written == [2, 2, 1, 0]  # two projects a run, then nothing left to read
    assert usage(meter="storage_artifacts") == {
        **{(p.pk, hour, "storage_artifacts"): 1000 * (i + 1) for i, p in enumerate(projects[:4])},
        (projects[4].pk, hour, "storage_artifacts"): 5000 + 300}


def test_an_hours_archives_wait_until_builds_that_ended_in_it_have_committed(workspace, hour, settings):
    """The cursor of an hour's archives passes each project once: a build that ended in the hour's last moment but
    committed after a run passed its project would never be counted. So the hour waits its settle time."""
    settings.BILLING_METER_SETTLE_SECONDS = 60
    early, late = (ProjectFactory(workspace=workspace, slug=slug) for slug in ("a-early", "b-late"))
    DeploymentFactory(project=early, status="ready", artifact_bytes=1000, created_at=hour, finished_at=hour)
    end = hour + H
    assert usage_hour_record(hour=hour, now=end + timedelta(seconds=1)) == 0  # just over: nothing read yet
    # the late build ended within the hour and commits now, half a minute after it
    DeploymentFactory(project=late, status="ready", artifact_bytes=3600, created_at=hour,
                      finished_at=end - timedelta(seconds=1))
    assert usage_hour_record(hour=hour, now=end + timedelta(seconds=60)) == 2
    assert usage(meter="storage_artifacts") == {(early.pk, hour, "storage_artifacts"): 1000,
                                                (late.pk, hour, "storage_artifacts"): 1}


def test_an_hour_that_leaves_the_lookback_with_archives_unmetered_is_logged(workspace, hour, settings, caplog):
    settings.BILLING_METER_LOOKBACK_HOURS, settings.BILLING_METER_STORAGE_BATCH = 1, 1
    for slug in ("a", "b"):
        DeploymentFactory(project=ProjectFactory(workspace=workspace, slug=slug), status="ready",
                          artifact_bytes=1000, finished_at=hour - H, created_at=hour - H)
    usage_meter()
    assert UsageRecord.objects.filter(meter="storage_artifacts").count() == 1
    assert "are not all metered" in caplog.text and "BILLING_METER_STORAGE_BATCH" in caplog.text
    caplog.clear()
    usage_meter()  # the second project: the hour is complete
    assert UsageRecord.objects.filter(meter="storage_artifacts").count() == 2 and "not all metered" not in caplog.text
    DeploymentFactory(project=ProjectFactory(workspace=workspace, slug="d"), status="ready", artifact_bytes=10,
                      created_at=hour + 59 * (H / 60), finished_at=hour + 61 * (H / 60))  # kept from the next hour
    usage_meter()
    assert "not all metered" not in caplog.text  # not this hour's archive: nothing left


def test_edge_counters_become_requests_bytes_and_visits(project, hour, workspace):
    preview = DeploymentFactory(project=project, status="ready", env="preview", created_at=hour - H)
    other = DeploymentFactory(project=project, status="ready", env="preview", created_at=hour - H)
    at = hour.timestamp() + 60
    for _ in range(3):
        edge_metrics.record(project.pk, 200, 0.01, at=at, size=1000, deployment_id=preview.pk)
    edge_metrics.record(project.pk, 500, 0.01, at=at + 1800, size=24)
    edge_metrics.record(project.pk, 200, 0.01, at=at + 3600, size=99)  # the next hour: not this one
    edge_metrics.flush()
    usage_hour_record(hour=hour)
    assert usage() == {(project.pk, hour, "edge_requests"): 4, (project.pk, hour, "edge_bytes"): 3024}
    visit = DeploymentVisit.objects.get()
    assert visit.deployment_id == preview.pk and visit.first_at == hour
    assert not DeploymentVisit.objects.filter(deployment=other).exists()


@pytest.fixture(params=["marks", "redis"])
def edge_cache(request, settings, tmp_path):
    """The hour's sets as marks in a folder (the tests' cache is no Redis), then on a real Redis."""
    settings.DATA_DIR = tmp_path
    if request.param == "redis":
        return request.getfixturevalue("redis_cache")
    return cache


def test_edge_counts_are_metered_in_bounded_batches_and_late_counts_again(workspace, hour, settings, edge_cache,
                                                                          caplog):
    """A run takes at most BILLING_METER_EDGE_BATCH projects whose counts of the hour changed since a run took them,
    so a run stays bounded however many projects were served; counts flushed after a project was taken mark it
    again, and its record is raised on a later run."""
    settings.BILLING_METER_EDGE_BATCH = 2
    projects = [ProjectFactory(workspace=workspace, slug=f"p{i}") for i in range(5)]
    at = hour.timestamp() + 60
    for project in projects:
        edge_metrics.record(project.pk, 200, 0.01, at=at, size=100)
    edge_metrics.flush()

    def edge_records():
        return {ref: n for (ref, _, meter), n in usage(meter="edge_requests").items()}

    counted = []
    for _ in range(4):
        usage_hour_record(hour=hour)
        counted.append(len(edge_records()))
    assert counted == [2, 4, 5, 5]
    assert edge_records() == {p.pk: 1 for p in projects}

    first = projects[0]
    edge_metrics.record(first.pk, 200, 0.01, at=at + 1200, size=100)  # flushed late, after its project was taken
    edge_metrics.record(first.pk, 200, 0.01, at=at + 1300, size=100)
    edge_metrics.flush()
    assert edge_metrics.hour_totals_left(hour.timestamp()) == 1
    usage_hour_record(hour=hour)
    assert edge_records()[first.pk] == 3 and usage()[(first.pk, hour, "edge_bytes")] == 300
    assert edge_metrics.hour_totals_left(hour.timestamp()) == 0

    later = ProjectFactory(workspace=workspace, slug="later")  # served, and never metered before the hour leaves
    for project in (later, *projects[1:3]):
        edge_metrics.record(project.pk, 200, 0.01, at=at, size=1)
    edge_metrics.flush()
    settings.BILLING_METER_LOOKBACK_HOURS = 1
    with caplog.at_level("WARNING"):
        usage_meter()
    assert "edge counts of 1 projects" in caplog.text


def test_running_an_hour_again_never_counts_twice(project, hour, workspace):
    DeploymentFactory(project=project, status="ready", started_at=hour, finished_at=hour + timedelta(minutes=5))
    edge_metrics.record(project.pk, 200, 0.01, at=hour.timestamp() + 5, size=10)
    usage_hour_record(hour=hour)
    usage_hour_record(hour=hour)
    usage_meter()  # the beat task: the last few finished hours, this one among them
    assert usage() == {(project.pk, hour, "build_seconds"): 300, (project.pk, hour, "edge_requests"): 1,
                       (project.pk, hour, "edge_bytes"): 10}
    assert UsageRecord.objects.count() == 3
    cache.clear()  # the edge counters expired: what was recorded stays
    usage_hour_record(hour=hour)
    assert usage()[(project.pk, hour, "edge_requests")] == 1


def test_an_unfinished_hour_is_refused(hour):
    with pytest.raises(ValueError):
        usage_hour_record(hour=hour + H)


def test_the_beat_task_seeds_the_price_book_from_settings(settings):
    assert not Price.objects.exists()
    usage_meter()
    prices = {p.meter: p for p in Price.objects.all()}
    assert set(prices) == set(settings.BILLING_PRICES)
    assert prices["instance_seconds:pro"].unit_amount == settings.INSTANCE_SIZES["pro"]["price_per_hour"]
    assert prices["instance_seconds:default"].unit_size == 3600
    usage_meter()
    assert Price.objects.count() == len(settings.BILLING_PRICES)


def test_the_edge_counts_the_bytes_it_serves(client, workspace, settings, tmp_path, hour, time_machine):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    (settings.ARTIFACT_ROOT / "shop-1").mkdir(parents=True)
    (settings.ARTIFACT_ROOT / "shop-1" / "index.html").write_text("<h1>" + "x" * 996 + "</h1>")
    project = ProjectFactory(workspace=workspace, slug="shop")
    deployment = DeploymentFactory(project=project, env="production", status=Deployment.Status.READY,
                                   artifact_path="shop-1", created_at=hour - H)
    project.production_deployment = deployment
    project.save(update_fields=["production_deployment"])
    time_machine.move_to(hour + timedelta(minutes=10), tick=False)
    for _ in range(2):
        resp = client.get("/", HTTP_HOST="shop.localhost")
        assert resp.status_code == 200 and len(resp.content) == 1005
    time_machine.move_to(hour + timedelta(minutes=70), tick=False)
    usage_hour_record(hour=hour)
    assert usage(meter__startswith="edge") == {(project.pk, hour, "edge_requests"): 2,
                                               (project.pk, hour, "edge_bytes"): 2010}
    assert not DeploymentVisit.objects.exists()  # production: only previews are asked about


def test_heartbeats_store_the_highest_memory_peak(api, workspace, project):
    node = AgentNodeFactory(workspace=workspace, raw="agn_memory_node", runtimes=["process"])
    deployment = DeploymentFactory(project=project, status="ready", env="production",
                                   snapshot={"start": "node app.js"})
    project.production_deployment = deployment  # placement keeps its instance (others are told to stop)
    project.save(update_fields=["production_deployment"])
    instance = InstanceFactory(deployment=deployment, node=node, status="starting")

    def beat(status=200, **report):
        resp = api.post(f"/v1/agents/{node.pk}/heartbeat",
                        {"instances": [{"instanceId": instance.pk, "status": "running", **report}]}, format="json",
                        HTTP_AUTHORIZATION="Bearer agn_memory_node")
        assert resp.status_code == status, resp.content
        return Instance.objects.get(pk=instance.pk).memory_peak_bytes

    assert beat() is None
    assert beat(memoryPeakBytes=50_000_000) == 50_000_000
    assert beat(memoryPeakBytes=20_000_000) == 50_000_000  # a restarted sandbox reports less: the peak stays
    assert beat(memoryPeakBytes=80_000_000) == 80_000_000
    assert beat(400, memoryPeakBytes="lots") == 80_000_000 and beat(400, memoryPeakBytes=-1) == 80_000_000
    assert beat(memoryPeakBytes=6 * 2 ** 30) == 6 * 2 ** 30  # past a 32-bit integer: kept whole, not wrapped


def test_the_agent_reports_its_sandboxes_memory_peak():
    from platform_app.nodes.agent import Instance as AgentInstance

    class Sandboxed:
        pid = 42

        def poll(self):
            return None

        def usage(self):
            return {"memory": 12_345_678, "cpu": 1.5}

    inst = AgentInstance.__new__(AgentInstance)
    inst.instance_id, inst.crashed, inst.healthy, inst.error, inst.restarts = "inst_x", False, True, "", 0
    inst.sandboxed = Sandboxed()
    inst.listener = type("L", (), {"getsockname": lambda self: ("127.0.0.1", 5555)})()
    assert inst.report() == {"instanceId": "inst_x", "port": 5555, "pid": 42, "status": "running", "error": "",
                             "restarts": 0, "memoryPeakBytes": 12_345_678}


def test_without_redis_the_projects_other_processes_served_are_metered(project, workspace, hour, tmp_path,
                                                                      settings):
    """Without Redis (one machine, the file cache) each process marks the projects it served in the hour's folder:
    metering reads the counts a separate process flushed, for the projects served, and an hour past the counters'
    lifetime loses its folder."""
    from tests.processes import child_env, manage

    settings.DATA_DIR = tmp_path
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}
    quiet = ProjectFactory(workspace=workspace, slug="quiet", name="Quiet")  # never served: no mark, no record
    stale = int(hour.timestamp()) // 3600 - settings.EDGE_METRICS_TTL_SECONDS // 3600 - 1
    (tmp_path / "edge-marks" / f"edges-{stale}").mkdir(parents=True)
    (tmp_path / "edge-marks" / f"edges-{stale}" / project.pk).touch()
    script = ("from platform_app.services.automation import edge_metrics as m; "
              f"[m.record({project.pk!r}, 200, 0.01, at={hour.timestamp() + 60}, size=500) for _ in range(3)]; "
              "m.flush()")
    manage(child_env(data_dir=tmp_path), "shell", "--no-imports", "-c", script, timeout=120)

    usage_hour_record(hour=hour)
    assert usage() == {(project.pk, hour, "edge_requests"): 3, (project.pk, hour, "edge_bytes"): 1500}
    assert not usage(project_ref=quiet.pk)
    assert sorted(p.name for p in (tmp_path / "edge-marks").iterdir()) == [f"edges-{int(hour.timestamp()) // 3600}"]
