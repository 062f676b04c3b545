"""The three starter templates still deploy and serve with everything in the sandbox: the static site from the
edge, the Python and Node apps from a node agent's sandboxed instances, through the edge."""
import shutil

import httpx
import pytest

from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.sandbox.conftest import deploy, log_text
from tests.processes import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_three_starters_deploy_and_serve(live_server, sandbox, alice, workspace, as_user, tmp_path):
    from django.test.testcases import TestCase

    from platform_app.models import Project
    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    client = as_user(alice)
    templates = {"static-site": "<h1>It works</h1>", "python-wsgi": "Hello from a Python WSGI app",
                 "node-app": "Hello from a Node app"}
    if shutil.which("node") is None:
        templates.pop("node-app")
    deployments = {}
    for template in templates:
        created = client.post("/v1/orgs/acme/projects/from-template", {"name": template, "template": template},
                              format="json")
        assert created.status_code == 201
        deployment = deploy(client, Project.objects.get(pk=created.json()["id"]), TestCase.captureOnCommitCallbacks)
        assert deployment.status == "ready", log_text(deployment)
        assert "Building in a sandbox (bubblewrap)" in log_text(deployment)
        deployments[template] = deployment
    agent = Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name="node",
                       runner=build_runner(), data_dir=tmp_path / "node", capacity=4)
    try:
        for template, expected in templates.items():
            host = f"{template}.localhost"

            def served():
                agent.step()
                resp = httpx.get(live_server.url + "/", headers={"Host": host})
                return resp.status_code == 200 and resp.text

            assert expected in wait_until(served, timeout=30, what=f"the {template} starter")
        assert {inst.sandboxed.runner for inst in agent.instances.values()} == {"bubblewrap"}
        assert len(agent.instances) == len(templates) - 1  # the static site needs no instance
    finally:
        agent.leave()
