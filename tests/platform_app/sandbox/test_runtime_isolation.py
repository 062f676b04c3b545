"""A start command is a stranger's code too: its instance runs in the node's sandbox, sees nothing of the
platform or of another tenant's instance, and is reached only through its port (the agent relays the edge's
requests into its network namespace)."""
import time

import httpx
import pytest

from platform_app.models import RuntimeLogLine
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.sandbox.conftest import deploy, probe_script, probes, secrets_of_the_platform

pytestmark = pytest.mark.django_db(transaction=True)


def _until(predicate, timeout=20.0, step=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if step:
            step()
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return predicate()


def test_a_start_command_sees_and_reaches_nothing_of_the_platform(live_server, sandbox, workspace, alice, as_user,
                                                                   make_project, tmp_path):
    from django.test.testcases import TestCase

    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    capture = TestCase.captureOnCommitCallbacks
    client = as_user(alice)
    other = make_project("neighbour", {"index.html": "<h1>neighbour</h1>"},
                         start_command="python3 -m http.server $PORT")
    neighbour = deploy(client, other, capture)
    agent = Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name="node",
                       runner=build_runner(), data_dir=tmp_path / "node", capacity=4)
    try:
        agent.step()
        neighbour_port = next(iter(agent.instances.values())).port
        web_port = int(live_server.url.rsplit(":", 1)[1])
        script = probe_script(web_port=web_port, other_artifact=tmp_path / "node" / "instances",
                              extra_ports={"neighbour": neighbour_port})
        project = make_project("prober", {"probe.py": script, "index.html": "<h1>prober</h1>"},
                               start_command="python3 probe.py && exec python3 -m http.server $PORT")
        deployment = deploy(client, project, capture)
        assert deployment.status == "ready", deployment.error_message

        def text():
            return "\n".join(RuntimeLogLine.objects.filter(deployment=deployment).values_list("text", flat=True))

        found = _until(lambda: len(probes(text())) >= 21 and probes(text()), step=agent.step)
        host = f"prober-{deployment.pk[4:12]}.localhost"
        page = _until(lambda: (r := httpx.get(live_server.url + "/", headers={"Host": host})).status_code == 200 and r)
        assert page.text == "<h1>prober</h1>"  # the edge reaches it, through the agent's relay
    finally:
        agent.leave()
    for name in ("jwt-key", "encryption-key", "django-secret", "other-artifact", "relative-key"):
        assert found[f"read {name}"].startswith("refused: FileNotFoundError"), name
    for service in ("postgresql", "redis", "web", "neighbour"):
        assert found[f"connect {service}"] == "refused: ConnectionRefusedError", service
    assert all("403 Forbidden" in r for n, r in found.items() if n.startswith("proxy ")), found
    assert "PORT" in found["environ"] and "DATABASE_URL" not in found["environ"]
    for name, value in secrets_of_the_platform().items():
        assert value not in text(), f"{name} leaked into the runtime log"
