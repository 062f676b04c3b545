"""Image deployments through the HTTP API: a project from an image in a real registry, its tag pinned to a digest
when it is deployed, pulled and run by a node agent in the sandbox, served by the edge; the project's registry
credentials (kept encrypted, never answered); refusals that end the deployment `error` with the reason."""
import time

import httpx
import pytest

from platform_app.models import Deployment, Project
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.agents.factories import AgentNodeFactory
from tests.platform_app.images.registry import busybox_layer, layer, oci_layout
from tests.platform_app.sandbox.conftest import log_text, sandbox  # noqa: F401 - the fixture

SERVE = {"Cmd": ["/bin/sh", "-c", "mkdir -p /tmp/www && cp /www/* /tmp/www/ && env > /tmp/www/env.txt && "
                                  "exec busybox httpd -f -p $PORT -h /tmp/www"],
         "Env": ["PATH=/bin", "GREETING=from-the-config", "FROM_CONFIG=yes"]}


def _image(tmp_path, registry, page: bytes, *, name="shop/web", tag="v1", folder="v1") -> str:
    """Push a two-layer busybox image (the second layer whites out a file of the first) serving `page`."""
    lower = busybox_layer([("www/secret.txt", b"whited out")])
    upper = layer([("www/.wh.secret.txt", b""), ("www/index.html", page)])
    return registry.push(oci_layout(tmp_path / folder, [lower, upper], SERVE), name, tag)


def _project(client, ref, slug="shop") -> dict:
    resp = client.post("/v1/orgs/acme/projects/from-image", {"name": slug, "slug": slug, "imageRef": ref},
                       format="json")
    assert resp.status_code == 201, resp.content
    return resp.json()


def _deploy(client, project_id, **body) -> dict:
    resp = client.post(f"/v1/orgs/acme/projects/{project_id}/deployments/image", body, format="json")
    assert resp.status_code == 201, resp.content
    return resp.json()


def _join(live_server, workspace, folder):
    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    return Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name=folder.name,
                      runner=build_runner(), data_dir=folder)


def _served(agent, live_server, host, path="/", want=None, seconds=30) -> httpx.Response:
    """Heartbeat until the edge answers `path` on `host` with 200 (and `want` in it)."""
    deadline, page = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        agent.step()
        page = httpx.get(live_server.url + path, headers={"Host": host})
        if page.status_code == 200 and (want is None or want in page.text):
            return page
        time.sleep(0.3)
    return page


@pytest.mark.django_db(transaction=True)
def test_an_image_project_is_pulled_run_in_the_sandbox_and_served_by_the_edge(live_server, sandbox, alice, as_user,
                                                                              workspace, registry, tmp_path):
    client = as_user(alice)
    ref = _image(tmp_path, registry, b"<h1>shop v1</h1>\n")
    project = _project(client, ref)
    assert project["source"] == "image" and project["imageRef"] == ref and project["registryCredentialsSet"] is False
    resp = client.post(f"/v1/orgs/acme/projects/{project['id']}/env",
                       {"key": "GREETING", "value": "from-the-project", "target": ["production"]}, format="json")
    assert resp.status_code == 201
    agent = _join(live_server, workspace, tmp_path / "node-a")
    try:
        assert "image" in client.get("/v1/orgs/acme/agents").json()["items"][0]["runtimes"]
        deployment = _deploy(client, project["id"])
        assert deployment["status"] == "ready", deployment["errorMessage"]
        digest = deployment["snapshot"]["imageDigest"]
        assert digest.startswith("sha256:") and deployment["snapshot"]["registry"] == registry.host
        assert Project.objects.get(pk=project["id"]).production_deployment_id == deployment["id"]

        page = _served(agent, live_server, "shop.localhost", want="shop v1")
        assert page.text == "<h1>shop v1</h1>\n"
        assert httpx.get(live_server.url + "/secret.txt", headers={"Host": "shop.localhost"}).status_code == 404
        env = dict(line.split("=", 1) for line in httpx.get(live_server.url + "/env.txt",
                                                             headers={"Host": "shop.localhost"}).text.splitlines()
                   if "=" in line)
        assert env["GREETING"] == "from-the-project" and env["FROM_CONFIG"] == "yes"  # the project's on top
        assert env["PORT"] == "8080" and env["PATH"] == "/bin"
        assert not any(k in env for k in ("DATABASE_URL", "SECRET_KEY", "REDIS_URL"))
        instances = client.get(f"/v1/orgs/acme/deployments/{deployment['id']}/instances").json()["items"]
        assert [i["status"] for i in instances] == ["running"]
        log = log_text(Deployment.objects.get(pk=deployment["id"]))
        assert f"is {digest}" in log and f"Pulling {registry.host}/shop/web@{digest}" in log
        assert log.count(": fetched in") == 3 and "layer sha256:" in log  # the config and both layers, timed

        # the same image again: the node has its root, and asks the registry nothing
        blobs = sorted(p.name for p in (tmp_path / "node-a/images/blobs/sha256").iterdir())
        again = _deploy(client, project["id"])
        assert again["snapshot"]["imageDigest"] == digest
        assert _served(agent, live_server, "shop.localhost", want="shop v1").status_code == 200
        deadline = time.monotonic() + 20
        while "cached on this node" not in log_text(Deployment.objects.get(pk=again["id"])):
            assert time.monotonic() < deadline, log_text(Deployment.objects.get(pk=again["id"]))
            agent.step()
            time.sleep(0.2)
        second = log_text(Deployment.objects.get(pk=again["id"]))
        assert "fetched" not in second and second.count(": cached") == 2
        assert sorted(p.name for p in (tmp_path / "node-a/images/blobs/sha256").iterdir()) == blobs
    finally:
        agent.leave()


@pytest.mark.django_db(transaction=True)
def test_a_moved_tag_changes_nothing_deployed_until_a_new_deployment_and_rollback_runs_the_old_digest(
        live_server, sandbox, alice, as_user, workspace, registry, tmp_path):
    client = as_user(alice)
    ref = _image(tmp_path, registry, b"first\n", name="moving/app", tag="stable")
    project = _project(client, ref, slug="moving")
    agent = _join(live_server, workspace, tmp_path / "node-a")
    try:
        first = _deploy(client, project["id"])
        assert _served(agent, live_server, "moving.localhost", want="first").text == "first\n"
        _image(tmp_path, registry, b"second\n", name="moving/app", tag="stable", folder="v2")  # the tag moves
        agent.leave()
        agent = _join(live_server, workspace, tmp_path / "node-b")  # a fresh node pulls what was deployed
        assert _served(agent, live_server, "moving.localhost", want="first").text == "first\n"
        assert Deployment.objects.get(pk=first["id"]).snapshot["imageDigest"] == first["snapshot"]["imageDigest"]

        second = _deploy(client, project["id"])
        assert second["snapshot"]["imageDigest"] != first["snapshot"]["imageDigest"]
        assert _served(agent, live_server, "moving.localhost", want="second").text == "second\n"
        resp = client.post(f"/v1/orgs/acme/projects/{project['id']}/rollback", {"deploymentId": first["id"]},
                           format="json")
        assert resp.status_code == 201 and resp.json()["snapshot"]["imageDigest"] == first["snapshot"]["imageDigest"]
        assert _served(agent, live_server, "moving.localhost", want="first").text == "first\n"
    finally:
        agent.leave()


@pytest.mark.django_db(transaction=True)
def test_registry_credentials_are_kept_encrypted_never_answered_and_a_wrong_password_is_the_registrys_answer(
        alice_client, workspace, private_registry, tmp_path):
    AgentNodeFactory(workspace=workspace, runtimes=["process", "image"], status="online")
    ref = _image(tmp_path, private_registry, b"private\n", name="team/private")
    project = _project(alice_client, ref, slug="private")
    url = f"/v1/orgs/acme/projects/{project['id']}/registry-credentials"

    anonymous = _deploy(alice_client, project["id"])
    assert anonymous["status"] == "error"
    assert "asks for credentials (the project has none): 401 Unauthorized" in anonymous["errorMessage"]

    assert alice_client.put(url, {"username": "deployer", "password": "wrong-pass"}, format="json").status_code == 204
    stored = Project.objects.get(pk=project["id"]).registry_credentials_encrypted
    assert stored and "wrong-pass" not in stored and "deployer" not in stored
    refused = _deploy(alice_client, project["id"])
    assert refused["status"] == "error"
    assert refused["errorMessage"] == (f"{private_registry.host} refused the credentials: 401 Unauthorized "
                                       f"(UNAUTHORIZED: authentication required)")
    assert "Error: " in log_text(Deployment.objects.get(pk=refused["id"]))

    assert alice_client.put(url, {"username": "deployer", "password": "s3cret-pass"}, format="json").status_code == 204
    shown = alice_client.get(f"/v1/orgs/acme/projects/{project['id']}")
    assert shown.json()["registryCredentialsSet"] is True and b"s3cret-pass" not in shown.content
    ready = _deploy(alice_client, project["id"])
    assert ready["status"] == "ready" and ready["snapshot"]["imageDigest"].startswith("sha256:")
    assert b"s3cret-pass" not in alice_client.get(f"/v1/orgs/acme/deployments/{ready['id']}").content

    assert alice_client.delete(url).status_code == 204
    assert alice_client.get(f"/v1/orgs/acme/projects/{project['id']}").json()["registryCredentialsSet"] is False
    assert Project.objects.get(pk=project["id"]).registry_credentials_encrypted == ""


@pytest.mark.django_db
@pytest.mark.parametrize("body, field", [({"username": "deployer"}, "password"), ({"password": "x"}, "username"),
                                         ({"username": "a", "password": "b", "registry": "x"}, "registry"),
                                         ({"username": "bad\nname", "password": "b"}, "username")])
def test_bad_registry_credentials_are_400_and_change_nothing(alice_client, workspace, body, field):
    from tests.platform_app.projects.factories import ProjectFactory

    project = ProjectFactory(workspace=workspace, source="image", image_ref="registry.example.com/a:1", git_url="")
    resp = alice_client.put(f"/v1/orgs/acme/projects/{project.pk}/registry-credentials", body, format="json")
    assert resp.status_code == 400 and field in resp.json()["details"]
    assert Project.objects.get(pk=project.pk).registry_credentials_encrypted == ""


@pytest.mark.django_db
def test_registry_credentials_belong_to_image_projects_and_admins(alice_client, bob, as_user, workspace):
    from tests.platform_app.projects.factories import ProjectFactory

    git = ProjectFactory(workspace=workspace, source="git")
    resp = alice_client.put(f"/v1/orgs/acme/projects/{git.pk}/registry-credentials",
                            {"username": "a", "password": "b"}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "not_an_image_project"
    image = ProjectFactory(workspace=workspace, source="image", image_ref="registry.example.com/a:1", git_url="")
    resp = as_user(bob).put(f"/v1/orgs/acme/projects/{image.pk}/registry-credentials",
                            {"username": "a", "password": "b"}, format="json")
    assert resp.status_code == 403
    assert Project.objects.get(pk=image.pk).registry_credentials_encrypted == ""


@pytest.mark.django_db(transaction=True)
def test_an_image_over_the_limits_ends_error_naming_the_limit(alice_client, workspace, registry, settings, tmp_path):
    AgentNodeFactory(workspace=workspace, runtimes=["image"], status="online")
    project = _project(alice_client, _image(tmp_path, registry, b"big\n", name="big/app"), slug="big")
    settings.IMAGE_MAX_BYTES = 100_000
    over = _deploy(alice_client, project["id"])
    assert over["status"] == "error" and "over IMAGE_MAX_BYTES (100000)" in over["errorMessage"]
    settings.IMAGE_MAX_BYTES, settings.IMAGE_MAX_LAYERS = 10 ** 9, 1
    over = _deploy(alice_client, project["id"])
    assert over["status"] == "error" and "has 2 layers: over IMAGE_MAX_LAYERS (1)" in over["errorMessage"]
    assert Project.objects.get(pk=project["id"]).production_deployment_id is None


@pytest.mark.django_db(transaction=True)
def test_a_registry_the_guard_refuses_ends_error_without_asking_it(alice_client, workspace, registry, settings,
                                                                    tmp_path):
    AgentNodeFactory(workspace=workspace, runtimes=["image"], status="online")
    project = _project(alice_client, _image(tmp_path, registry, b"x\n", name="guarded/app"), slug="guarded")
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    refused = _deploy(alice_client, project["id"])
    assert refused["status"] == "error"
    assert refused["errorMessage"] == f"{registry.host}: this address cannot be reached from the platform."


@pytest.mark.django_db
def test_the_dashboards_new_project_flow_creates_an_image_project_and_deploys_it(alice, workspace, registry,
                                                                                  private_registry, tmp_path):
    from tests.platform_app.pages.conftest import sign_in

    AgentNodeFactory(workspace=workspace, runtimes=["process", "image"], status="online")
    owner = sign_in(alice)
    assert "From an image" in owner.get("/dashboard/acme/new/").content.decode()
    ref = _image(tmp_path, registry, b"dash\n", name="dash/app")
    resp = owner.post("/dashboard/acme/new/", {"action": "image", "i-image_ref": ref, "i-name": "Dash"})
    assert resp.status_code == 302
    project = Project.objects.get(name="Dash")
    deployment = Deployment.objects.get(project=project)
    assert resp["Location"].endswith(f"/deployments/{deployment.pk}/")
    assert project.source == "image" and deployment.status == "ready" and deployment.snapshot["imageDigest"]
    page = owner.get(resp["Location"]).content.decode()
    assert deployment.snapshot["imageDigest"] in page and registry.host in page

    private = _image(tmp_path, private_registry, b"dash\n", name="dash/private", folder="p")
    half = owner.post("/dashboard/acme/new/", {"action": "image", "i-image_ref": private,
                                                        "i-name": "Half", "i-username": "deployer"})
    assert half.status_code == 400 and "or neither" in half.content.decode()
    assert not Project.objects.filter(name="Half").exists()
    resp = owner.post("/dashboard/acme/new/", {"action": "image", "i-image_ref": private, "i-name": "Priv",
                                                        "i-username": "deployer", "i-password": "s3cret-pass"})
    assert resp.status_code == 302
    assert Deployment.objects.get(project__name="Priv").status == "ready"
    bad = owner.post("/dashboard/acme/new/", {"action": "image", "i-image_ref": "Not An Image",
                                                       "i-name": "Bad"})
    assert bad.status_code == 400 and "Not an image reference" in bad.content.decode()
    assert not Project.objects.filter(name="Bad").exists()


@pytest.mark.django_db(transaction=True)
def test_a_stalled_pull_holds_back_no_heartbeat_and_the_instance_starts_once_it_ends(
        live_server, sandbox, alice, as_user, workspace, registry, tmp_path):
    """The node pulls in a thread of its own: while a layer's download stalls (a gate in front of the registry),
    heartbeats go on and report the instance `starting`; once the layer comes, the instance runs and is served."""
    import re
    import threading

    from pytest_httpserver import HTTPServer
    from werkzeug import Response

    gate, layers_asked = threading.Event(), []
    front = HTTPServer(host="127.0.0.1", threaded=True)

    def forward(request):
        if "/blobs/" in request.path and request.path.rsplit("/", 1)[1] in layer_digests:
            layers_asked.append(request.path)
            gate.wait(60)
        upstream = httpx.get(f"http://{registry.host}{request.full_path.rstrip('?')}",
                             headers={k: v for k, v in request.headers.items() if k.lower() in ("accept",)})
        return Response(upstream.content, status=upstream.status_code,
                        headers={k: v for k, v in upstream.headers.items()
                                 if k.lower() in ("content-type", "docker-content-digest")})

    front.expect_request(re.compile(r"^/v2/.*")).respond_with_handler(forward)
    front.start()
    client = as_user(alice)
    agent = None
    try:
        ref = _image(tmp_path, registry, b"after the wait\n", name="slow/app").replace(
            registry.host, f"127.0.0.1:{front.port}")
        project = _project(client, ref, slug="slow")
        agent = _join(live_server, workspace, tmp_path / "node-a")
        deployment = _deploy(client, project["id"])
        manifest = httpx.get(f"http://{registry.host}/v2/slow/app/manifests/{deployment['snapshot']['imageDigest']}",
                             headers={"Accept": "application/vnd.oci.image.manifest.v1+json"}).json()
        layer_digests = {entry["digest"] for entry in manifest["layers"]}
        instances = f"/v1/orgs/acme/deployments/{deployment['id']}/instances"
        for _ in range(3):  # each heartbeat comes back while the layer waits at the gate
            stepped = threading.Thread(target=agent.step)
            stepped.start()
            stepped.join(20)
            assert not stepped.is_alive(), "a heartbeat waited for the pull"
            time.sleep(0.3)
        assert layers_asked  # the pull is under way, stalled
        assert [i["status"] for i in client.get(instances).json()["items"]] == ["starting"]

        gate.set()
        page = _served(agent, live_server, "slow.localhost", want="after the wait")
        assert page.status_code == 200 and page.text == "after the wait\n"
        assert [i["status"] for i in client.get(instances).json()["items"]] == ["running"]
        assert "fetched in" in log_text(Deployment.objects.get(pk=deployment["id"]))
    finally:
        gate.set()
        if agent is not None:
            agent.leave()
        front.clear()
        front.stop()
