"""Deployment and agent lists cost a fixed number of queries per page, however many items it holds, and the
values looked up in bulk (queue position, needs-redeploy, running instances) match the per-item rules."""
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.services.env.env import env_snapshot, env_var_create
from tests.factories import WorkspaceFactory
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

# authentication and membership (3 today, one spare), the page, the queue positions, the variables of its projects
LIST_QUERIES = 6


def _project(workspace, slug):
    project = ProjectFactory(workspace=workspace, name=slug.title(), slug=slug, git_url="file:///nowhere")
    env_var_create(project=project, key="API_URL", value=f"https://{slug}.example", type="plain",
                   targets=["production", "preview"], branch=None)
    env_var_create(project=project, key="API_URL", value=f"https://{slug}-feature.example", type="plain",
                   targets=["preview"], branch="feature")
    return project


def _deployments(workspace, per_project: int):
    """Per project: ready deployments built with today's variables, one built with old ones, queued ones."""
    start = timezone.now() - timedelta(hours=1)
    made = {"fresh": [], "stale": [], "queued": []}
    for p, slug in enumerate(("api", "web")):
        project = _project(workspace, f"{slug}-{per_project}")
        for i in range(per_project):
            env, branch = ("preview", "feature") if i % 2 else ("production", "main")
            current = env_snapshot(project=project, environment=env, branch=branch)
            made["fresh"].append(DeploymentFactory(
                project=project, env=env, branch=branch, status="ready", snapshot={"env": current},
                created_at=start + timedelta(seconds=p * 100 + i)))
        made["stale"].append(DeploymentFactory(
            project=project, env="production", branch="main", status="ready",
            snapshot={"env": {"names": ["API_URL"], "hash": "built-with-an-older-value"}},
            created_at=start + timedelta(seconds=p * 100 + 50)))
        made["queued"].append(DeploymentFactory(project=project, env="production", branch="main",
                                                created_at=start + timedelta(seconds=300 + p)))
    return made


@pytest.mark.parametrize("per_project", [1, 6])
def test_workspace_deployments_page_is_a_fixed_number_of_queries(alice, as_user, workspace, per_project,
                                                                 django_assert_max_num_queries):
    made = _deployments(workspace, per_project)
    # a queued deployment elsewhere, created first, is ahead in the shared build queue
    other = ProjectFactory(workspace=WorkspaceFactory(), name="Other", slug="other", git_url="file:///x")
    DeploymentFactory(project=other, env="production", branch="main",
                      created_at=timezone.now() - timedelta(days=1))
    client = as_user(alice)
    with django_assert_max_num_queries(LIST_QUERIES):
        resp = client.get("/v1/orgs/acme/deployments?limit=100")
    assert resp.status_code == 200
    items = {item["id"]: item for item in resp.json()["items"]}
    assert len(items) == 2 * per_project + 4
    assert all(items[d.pk]["needsRedeploy"] is False and items[d.pk]["queuePosition"] is None for d in made["fresh"])
    assert all(items[d.pk]["needsRedeploy"] is True for d in made["stale"])
    assert [items[d.pk]["queuePosition"] for d in made["queued"]] == [2, 3]
    assert all(items[d.pk]["needsRedeploy"] is False for d in made["queued"])


def test_project_deployments_page_is_a_fixed_number_of_queries(alice, as_user, workspace,
                                                               django_assert_max_num_queries):
    made = _deployments(workspace, 5)
    project = made["queued"][0].project
    client = as_user(alice)
    with django_assert_max_num_queries(LIST_QUERIES + 1):  # + the project lookup
        resp = client.get(f"/v1/orgs/acme/projects/{project.pk}/deployments?limit=100")
    assert resp.status_code == 200
    items = {item["id"]: item for item in resp.json()["items"]}
    assert len(items) == 7 and items[made["queued"][0].pk]["queuePosition"] == 1
    assert items[made["stale"][0].pk]["needsRedeploy"] is True


def test_a_changed_variable_flags_the_deployments_built_with_it(alice, as_user, workspace):
    made = _deployments(workspace, 2)
    client = as_user(alice)
    project = made["fresh"][0].project
    resp = client.post(f"/v1/orgs/acme/projects/{project.pk}/env", {"key": "FLAG", "value": "on",
                                                                   "target": ["production"]}, format="json")
    assert resp.status_code == 201
    items = {item["id"]: item for item in client.get("/v1/orgs/acme/deployments?limit=100").json()["items"]}
    production, preview = made["fresh"][0], made["fresh"][1]  # of the changed project
    assert (production.env, preview.env) == ("production", "preview")
    assert items[production.pk]["needsRedeploy"] is True
    assert items[preview.pk]["needsRedeploy"] is False  # the new variable is not in preview
    assert all(items[d.pk]["needsRedeploy"] is False for d in made["fresh"][2:])  # the other project
    # the detail view answers the same
    assert client.get(f"/v1/orgs/acme/deployments/{production.pk}").json()["needsRedeploy"] is True
    assert client.get(f"/v1/orgs/acme/deployments/{made['queued'][1].pk}").json()["queuePosition"] == 2


@pytest.mark.parametrize("nodes", [1, 8])
def test_agents_page_is_a_fixed_number_of_queries(alice, as_user, workspace, nodes, django_assert_max_num_queries):
    project = ProjectFactory(workspace=workspace, name="Svc", slug="svc", git_url="file:///x")
    deployment = DeploymentFactory(project=project, env="production", branch="main", status="ready")
    expected = {}
    for n in range(nodes):
        node = AgentNodeFactory(workspace=workspace, name=f"node-{n}", token_hash=f"{n:064d}",
                                runtimes=["process"])
        for status in ["running"] * n + ["stopped", "assigned"]:
            InstanceFactory(deployment=deployment, node=node, status=status)
        expected[node.pk] = n
    AgentNodeFactory(workspace=workspace, name="gone", token_hash="f" * 64, status="left")
    client = as_user(alice)
    with django_assert_max_num_queries(5):  # authentication and membership (one spare), the nodes, running counts
        resp = client.get("/v1/orgs/acme/agents")
    assert resp.status_code == 200
    assert {item["id"]: item["running"] for item in resp.json()["items"]} == expected


def test_the_dashboards_project_list_is_a_searchable_page_of_50_by_name(alice, workspace, client,
                                                                         django_assert_max_num_queries):
    """However many projects a workspace holds, its page shows 50 by name with their last deployments, in a fixed
    number of queries; `q` narrows by name and `page` walks on."""
    projects = [ProjectFactory(workspace=workspace, name=f"site {n:03d}", slug=f"site-{n:03d}") for n in range(120)]
    DeploymentFactory(project=projects[0], status="ready")
    client.force_login(alice)
    with django_assert_max_num_queries(12):
        first = client.get("/dashboard/acme/")
    html = first.content.decode()
    assert first.status_code == 200 and "site 000" in html and "site 049" in html and "site 050" not in html
    assert 'rel="next"' in html and "page=2" in html and "Page 1" in html
    last = client.get("/dashboard/acme/", {"page": "3"}).content.decode()
    assert "site 100" in last and "site 119" in last and 'rel="next"' not in last and 'rel="prev"' in last
    found = client.get("/dashboard/acme/", {"q": "site 11"}).content.decode()
    assert "site 110" in found and "site 119" in found and "site 000" not in found
    assert "No project matches." in client.get("/dashboard/acme/", {"q": "nothing like it"}).content.decode()
    assert client.get("/dashboard/acme/", {"page": "-4x"}).status_code == 200  # not a page: the first
