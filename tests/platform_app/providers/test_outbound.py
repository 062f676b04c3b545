"""User-supplied repository URLs through the HTTP API: only https (http where allowed) to addresses outside,
one generic answer for every refusal or failure, nothing created; builds check again; no server path shown.

The local Git server (127.0.0.1) and pytest-httpserver (127.0.0.2) stand for servers outside; a test that
wants loopback to count as inside, as in production, empties OUTBOUND_ALLOWED_NETWORKS.
"""
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from platform_app.models import Deployment, Project
from tests.conftest import git_repo, hosted_repo
from tests.local_servers import SilentListener
from tests.platform_app.env.factories import SecretFindingFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.test_outbound import INSIDE, LOOPBACK_NOTATIONS

pytestmark = pytest.mark.django_db

GENERIC = {"code": "git_unreachable", "message": "This address cannot be reached from the platform.",
           "details": None, "status": 400}


@pytest.fixture
def repo(make_local_repo, git_server):
    """A real repository behind the local Git server: (its URL, its alias path on the server)."""
    url = git_server.serve(make_local_repo({"index.html": "<h1>hi</h1>"}))
    return url, urlsplit(url).path


@pytest.fixture
def inside(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []


@pytest.fixture
def peer():
    server = HTTPServer(host="127.0.0.2", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


def refused_everywhere(client, url: str):
    """The same generic 400 from project creation and each inspection route; nothing created."""
    res = client.post("/v1/orgs/acme/projects", {"name": "Probe", "gitUrl": url}, format="json")
    assert (res.status_code, res.json()) == (400, GENERIC), url
    for route in ("detect", "repo-info"):
        res = client.post(f"/v1/framework/{route}", {"url": url}, format="json")
        assert (res.status_code, res.json()) == (400, GENERIC), (route, url)
    assert not Project.objects.exists()


@pytest.mark.parametrize("host", LOOPBACK_NOTATIONS)
def test_every_notation_of_an_inside_address_is_refused(host, alice, alice_client, repo, git_server, inside):
    port, path = urlsplit(git_server.base).port, repo[1]
    before = len(git_server.requests)
    refused_everywhere(alice_client, f"http://{host}:{port}{path}")
    assert len(git_server.requests) == before  # the live server behind that address never heard of it


@pytest.mark.parametrize("host", INSIDE + ["127.0.0.1:6379", "[::1]:6379"])
def test_inside_addresses_and_metadata_are_refused(host, alice, alice_client, inside):
    refused_everywhere(alice_client, f"http://{host}/latest/meta-data/")
    refused_everywhere(alice_client, f"https://{host}/acme/site.git")


def test_other_transports_and_local_paths_are_refused_even_for_allowed_addresses(alice, alice_client, repo,
                                                                                 git_server, make_local_repo):
    host_port = git_server.base.removeprefix("http://")
    local = make_local_repo({"a": "b"})
    before = len(git_server.requests)
    for url in (f"git://{host_port}{repo[1]}", f"ssh://git@{host_port}{repo[1]}", f"git@{host_port}:acme/x.git",
                "ext::sh -c touch% /tmp/pwned", "fd::17", local.as_uri(), str(local), "./repo.git", "~/repo.git",
                f"file://localhost{local}", f"http://user:secret@{host_port}{repo[1]}",
                f"{repo[0]}?x=1", f"{repo[0]}#frag", "--upload-pack=touch /tmp/pwned"):
        refused_everywhere(alice_client, url)
    assert len(git_server.requests) == before


def test_another_workspaces_hosted_repository_is_refused(alice, alice_client, charlie, as_user, hosted_git_root):
    res = as_user(charlie).post("/v1/orgs/charlies/projects/from-template", {"name": "c", "template": "static-site"},
                                format="json")
    assert res.status_code == 201 and res.json()["gitUrl"] is None
    theirs = Project.objects.get().git_url
    path = unquote(urlsplit(theirs).path)
    for url in (theirs, path, path.removesuffix(".git"), f"{hosted_git_root}/../hosted/{Path(path).parent.name}"):
        res = alice_client.post("/v1/orgs/acme/projects", {"name": "Stolen", "gitUrl": url}, format="json")
        assert (res.status_code, res.json()) == (400, GENERIC)
        res = alice_client.post("/v1/framework/detect", {"url": url}, format="json")
        assert (res.status_code, res.json()) == (400, GENERIC)
    assert Project.objects.count() == 1


def test_plain_http_is_refused_where_not_allowed(alice, alice_client, repo, settings):
    settings.OUTBOUND_ALLOW_HTTP = False
    refused_everywhere(alice_client, repo[0])


def test_a_name_resolving_inside_is_refused(alice, alice_client, repo, git_server, dns_server, inside):
    dns_server.records["git.example.test"] = ["127.0.0.1"]
    refused_everywhere(alice_client, f"http://git.example.test:{urlsplit(git_server.base).port}{repo[1]}")
    refused_everywhere(alice_client, "https://nowhere.example.test/acme/site.git")  # no such name


def test_git_is_pinned_to_the_checked_address(alice, alice_client, repo, git_server, dns_server):
    """Only the test's DNS server knows the name: git can only reach the server through the pinned address."""
    dns_server.records["git.example.test"] = ["127.0.0.1"]
    url = f"http://git.example.test:{urlsplit(git_server.base).port}{repo[1]}"
    res = alice_client.post("/v1/orgs/acme/projects", {"name": "Named", "gitUrl": url}, format="json")
    assert res.status_code == 201, res.json()
    assert res.json()["gitUrl"] == url and Project.objects.get().git_url == url
    hosts = {headers.get("Host") for _, path, headers in git_server.requests if path.startswith(repo[1])}
    assert hosts == {f"git.example.test:{urlsplit(git_server.base).port}"}


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}{path}", "http://169.254.169.254/latest/meta-data",
                                    "http://[::1]:{port}{path}"])
def test_a_redirect_inside_is_refused(target, alice, alice_client, repo, git_server, peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]  # the redirecting server only
    location = target.format(port=urlsplit(git_server.base).port, path=repo[1]) + "/info/refs?service=git-upload-pack"
    peer.expect_request("/moved.git/info/refs").respond_with_response(Response(status=302,
                                                                               headers={"Location": location}))
    before = len(git_server.requests)
    refused_everywhere(alice_client, peer.url_for("/moved.git"))
    assert len(git_server.requests) == before


def test_a_redirect_to_an_allowed_server_is_followed(alice, alice_client, repo, git_server, peer):
    peer.expect_request("/moved.git/info/refs").respond_with_response(Response(
        status=301, headers={"Location": f"{repo[0]}/info/refs?service=git-upload-pack"}))
    res = alice_client.post("/v1/orgs/acme/projects", {"name": "Moved", "gitUrl": peer.url_for("/moved.git")},
                            format="json")
    assert res.status_code == 201, res.json()
    assert Project.objects.get().git_url == peer.url_for("/moved.git")  # what the user gave
    detected = alice_client.post("/v1/framework/detect", {"url": peer.url_for("/moved.git")}, format="json")
    assert detected.status_code == 201 and detected.json()["framework"] == "static"


def test_an_unanswering_address_does_not_hang(alice, alice_client, settings):
    settings.OUTBOUND_CONNECT_TIMEOUT_SECONDS, settings.OUTBOUND_TIMEOUT_SECONDS = 0.3, 1.0
    listener = SilentListener()
    try:
        refused_everywhere(alice_client, f"{listener.url}/acme/site.git")
    finally:
        listener.close()


def test_a_template_project_never_shows_its_server_path(alice, alice_client, hosted_git_root):
    res = alice_client.post("/v1/orgs/acme/projects/from-template", {"name": "T", "template": "static-site"},
                            format="json")
    assert res.status_code == 201
    project_id = res.json()["id"]
    for body in (res.content, alice_client.get(f"/v1/orgs/acme/projects/{project_id}").content,
                 alice_client.get("/v1/orgs/acme/projects").content):
        assert str(hosted_git_root) not in body.decode() and b"file://" not in body
    detail = alice_client.get(f"/v1/orgs/acme/projects/{project_id}").json()
    assert (detail["gitUrl"], detail["source"], detail["template"]) == (None, "template", "static-site")


def test_schema_says_git_url_may_be_null(api):
    doc = api.get("/v1/openapi.json", HTTP_ACCEPT="application/json").json()
    git_url = doc["components"]["schemas"]["Project"]["properties"]["gitUrl"]
    assert git_url.get("nullable") is True and "template" in git_url["description"]


# Builds check again ---------------------------------------------------------------------------------------

def deploy(client, project, capture):
    with capture(execute=True):
        res = client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments", {"env": "production"}, format="json")
    assert res.status_code == 201
    return Deployment.objects.get(pk=res.json()["id"])


@pytest.fixture
def build_dirs(settings, tmp_path):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"


def test_a_build_clones_over_http_and_checks_the_address_again(alice, alice_client, workspace, repo, build_dirs,
                                                               settings, django_capture_on_commit_callbacks):
    res = alice_client.post("/v1/orgs/acme/projects", {"name": "Web", "gitUrl": repo[0]}, format="json")
    project = Project.objects.get(pk=res.json()["id"])
    first = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert first.status == "ready" and len(first.commit_sha) == 40
    settings.OUTBOUND_ALLOWED_NETWORKS = []  # the same address is now inside
    second = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert second.status == "error" and second.commit_sha == ""
    assert second.error_message == "git clone failed: This address cannot be reached from the platform."


@pytest.mark.parametrize("where", ["other workspace", "dotdot", "symlink", "outside", "bare path elsewhere",
                                   "inside address"])
def test_a_build_refuses_a_repository_the_project_may_not_read(where, alice, alice_client, workspace, charlie,
                                                               hosted_git_root, tmp_path, build_dirs,
                                                               django_capture_on_commit_callbacks):
    files = {"index.html": "<h1>not yours</h1>"}
    theirs = hosted_repo(charlie.memberships.get().workspace, "theirs", files)
    outside = git_repo(tmp_path / "outside", files).as_uri()  # a folder beside the hosted root
    (hosted_git_root / workspace.pk).mkdir(parents=True, exist_ok=True)
    (hosted_git_root / workspace.pk / "link").symlink_to(Path(unquote(urlsplit(theirs).path)))
    url = {"other workspace": theirs,
           "dotdot": f"file://{hosted_git_root}/{workspace.pk}/../{urlsplit(theirs).path.split('/')[-2]}/theirs",
           "symlink": (hosted_git_root / workspace.pk / "link").as_uri(),
           "outside": outside, "bare path elsewhere": str(tmp_path),
           "inside address": "http://169.254.169.254/latest/meta-data"}[where]
    project = ProjectFactory(workspace=workspace, name="P", slug="p", git_url=url, output_directory=".")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "error" and deployment.commit_sha == ""
    assert deployment.error_message == "git clone failed: This address cannot be reached from the platform."


def test_a_secret_finding_is_not_imported_from_a_repository_outside_the_workspace(alice_client, workspace, charlie):
    from platform_app.models import SecretFinding

    theirs = hosted_repo(charlie.memberships.get().workspace, "theirs", {".env": "API_TOKEN=x"})
    project = ProjectFactory(workspace=workspace, name="P", slug="p", git_url=theirs)
    finding = SecretFindingFactory(project=project, fingerprint="f" * 64, rule="github-token", file="ci.yml",
                                   line=1, preview="ghp_****", commit_sha="a" * 40)
    res = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/secret-findings/{finding.pk}/import",
                            {"key": "TOKEN", "target": ["production"]}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "not_importable"
    assert SecretFinding.objects.get().imported_at is None


def test_a_provider_repository_gets_its_token_in_a_header_never_in_the_url(alice, alice_client, workspace, repo,
                                                                           git_server, settings):
    import base64

    from platform_app.services.providers.git_connections import connection_save

    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS, "git-a": {**settings.GIT_PROVIDERS["git-a"],
                                                                  "web_url": git_server.base}}
    connection_save(workspace=workspace, provider="git-a", token="gho_secret_token")
    alias = repo[1].strip("/").removesuffix(".git")
    before = len(git_server.requests)
    res = alice_client.post("/v1/orgs/acme/projects", {"name": "Prov", "provider": "git-a", "repo": alias},
                            format="json")
    assert res.status_code == 201, res.json()
    assert (res.json()["gitUrl"], res.json()["gitProvider"], res.json()["gitRepo"]) == (None, "git-a", alias)
    seen = git_server.requests[before:]
    expected = "Basic " + base64.b64encode(b"x-access-token:gho_secret_token").decode()
    assert seen and all(headers.get("Authorization") == expected for _, _, headers in seen)
    assert not any("gho_secret_token" in path for _, path, _ in seen)
    assert Project.objects.get().git_url == ""
