"""Builders and agents on machines of their own: a builder process holding no platform secret claims a build
over the API and runs it in its sandbox while the platform keeps answering; an agent with a data folder of its
own downloads the artifact and serves the app; artifacts kept in S3-compatible storage (moto's server)."""
import time
from pathlib import Path

import httpx
import pytest

from platform_app.models import Deployment
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.sandbox.conftest import deploy, log_text, secrets_of_the_platform
from tests.platform_app.resources.s3_server import (ARTIFACTS_BUCKET, artifacts_bucket,  # noqa: F401 - fixtures
                                                    s3_endpoint)
from tests.processes import start_node, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _capture():
    from django.test.testcases import TestCase

    return TestCase.captureOnCommitCallbacks


def _status(deployment_id: str, *wanted) -> str | None:
    status = Deployment.objects.get(pk=deployment_id).status
    return status if status in wanted else None


def _files(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*")]


def test_a_builder_without_platform_secrets_builds_while_the_platform_keeps_serving(
        live_server, sandbox, alice, as_user, make_project, tmp_path):
    sandbox.BUILD_INLINE, sandbox.BUILD_CPU_SECONDS = False, 3
    builder = start_node(server=live_server.url, join=agent_invite_create(workspace=None)[1], name="builder-1",
                         data_dir=tmp_path / "builder", log_dir=tmp_path, build=1, run=False)
    try:
        client = as_user(alice)
        hostile = deploy(client, make_project("burner", {"index.html": "x"},
                                              build_command="python3 -c 'while True: pass'"), _capture())
        assert hostile.status == "building" and "Waiting for a builder." in log_text(hostile)
        health = []
        while not _status(hostile.pk, "error", "ready"):  # the platform answers while the builder burns
            health.append(httpx.get(live_server.url + "/health", timeout=5).status_code)
            time.sleep(0.2)
        assert set(health) == {200} and len(health) >= 3
        hostile.refresh_from_db()
        assert hostile.error_message == "The build went over its CPU time limit of 3 s (BUILD_CPU_SECONDS)."

        site = deploy(client, make_project("built-remotely", {"src/index.html": "<h1>built remotely</h1>"},
                                           build_command="mkdir -p out && cp src/index.html out/",
                                           output_directory="out"), _capture())
        wait_until(lambda: _status(site.pk, "ready", "error"), timeout=60, what="the build", logs=[builder])
        site.refresh_from_db()
        assert site.status == "ready", site.error_message
        assert "Builder builder-1 took the build." in log_text(site)
        assert site.snapshot["sandbox"]["runner"] == "bubblewrap"
        page = httpx.get(live_server.url + "/", headers={"Host": "built-remotely.localhost"})
        assert page.text == "<h1>built remotely</h1>"
        environ = Path(f"/proc/{builder.pid}/environ").read_bytes().decode()
        assert "DJANGO" not in environ.replace("DJANGO_SETTINGS_MODULE=platform_app.nodes.no_settings", "")
        for name, value in secrets_of_the_platform().items():
            assert value not in environ, name
    finally:
        builder.stop()
    # Looked at once the builder has stopped: it removes a finished build's folder after reporting it.
    assert not {"jwt-private.pem", "env-encryption-key", "django-secret-key"} & set(_files(tmp_path / "builder"))


def test_an_agent_with_its_own_data_folder_downloads_the_artifact_and_runs_it(
        live_server, sandbox, alice, workspace, as_user, make_project, tmp_path):
    from platform_app.services.projects.projects import project_create_from_template

    project = project_create_from_template(workspace=workspace, actor=alice, name="hello-py", template="python-wsgi")
    deployment = deploy(as_user(alice), project, _capture())
    assert deployment.status == "ready", deployment.error_message
    agent = start_node(server=live_server.url, join=agent_invite_create(workspace=workspace)[1], name="far-away",
                       data_dir=tmp_path / "agent", log_dir=tmp_path)
    try:
        host = f"{project.slug}-{deployment.pk[4:12]}.localhost"

        def served():
            resp = httpx.get(live_server.url + "/", headers={"Host": host}, timeout=5)
            return resp.status_code == 200 and resp.text

        assert wait_until(served, timeout=60, what="the app through the edge", logs=[agent]) == \
            "Hello from a Python WSGI app\n"
        downloaded = list((tmp_path / "agent" / "instances").glob("*/app/app.py"))
        assert len(downloaded) == 1 and not str(downloaded[0]).startswith(str(sandbox.ARTIFACT_ROOT))
    finally:
        agent.stop()


@pytest.fixture
def s3_artifacts(sandbox, artifacts_bucket):  # noqa: F811 - the fixture imported above
    """Artifact storage in a bucket of a real S3-compatible server (moto's), after the sandbox's settings."""
    return artifacts_bucket


def test_artifacts_in_s3_compatible_storage_are_served_and_run_from_there(
        live_server, s3_artifacts, sandbox, alice, workspace, as_user, make_project, tmp_path):
    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner
    from platform_app.services.projects.projects import project_create_from_template

    client = as_user(alice)
    site = deploy(client, make_project("s3-site", {"index.html": "<h1>from the bucket</h1>"}), _capture())
    assert site.status == "ready", site.error_message
    keys = [o["Key"] for o in s3_artifacts.list_objects_v2(Bucket=ARTIFACTS_BUCKET).get("Contents", [])]
    assert keys == [f"artifacts/{site.pk}.tar.gz"]  # the source archive is gone once built
    local = sandbox.ARTIFACT_ROOT / site.pk
    import shutil

    shutil.rmtree(local)  # another web host: it has no copy of its own
    assert httpx.get(live_server.url + "/", headers={"Host": "s3-site.localhost"}).text == "<h1>from the bucket</h1>"
    assert (local / "index.html").is_file()

    app = project_create_from_template(workspace=workspace, actor=alice, name="s3-app", template="python-wsgi")
    deployment = deploy(client, app, _capture())
    assert deployment.status == "ready", deployment.error_message
    agent = Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name="node",
                       runner=build_runner(), data_dir=tmp_path / "node")
    try:
        agent.step()
        node = agent.client
        redirect = node.http.get(f"/v1/agents/{node.node_id}/artifacts/{deployment.pk}")
        assert redirect.status_code == 302 and "X-Amz-Signature=" in redirect.headers["location"]
        assert redirect.headers["location"].startswith(s3_artifacts.meta.endpoint_url)
        host = f"{app.slug}-{deployment.pk[4:12]}.localhost"
        def served():
            agent.step()
            resp = httpx.get(live_server.url + "/", headers={"Host": host})
            return resp.status_code == 200 and resp.text

        assert wait_until(served, timeout=30, what="the app from the bucket") == "Hello from a Python WSGI app\n"
    finally:
        agent.leave()


@pytest.mark.parametrize("argv", [["manage.py", "builder", "--local"], ["manage.py", "agent", "--local", "acme"]])
def test_production_refuses_to_start_a_node_without_a_sandbox(argv, tmp_path):
    import subprocess

    from tests.processes import PYTHON, ROOT, child_env

    env = child_env(data_dir=tmp_path / "data", settings="config.settings.production", SANDBOX_RUNNER="none",
                    DJANGO_SECRET_KEY="x" * 50, DJANGO_ALLOWED_HOSTS="example.com")
    done = subprocess.run([PYTHON, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "SANDBOX_ALLOW_NONE=true" in done.stderr and "unsafe" in done.stderr
    allowed = subprocess.run([PYTHON, "-m", "platform_app.nodes", "--server", "http://127.0.0.1:9", "--join", "x"],
                             cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                                "SANDBOX_RUNNER": "none"},
                             capture_output=True, text=True, timeout=60)
    assert allowed.returncode == 2 and "SANDBOX_ALLOW_NONE=true" in allowed.stderr
