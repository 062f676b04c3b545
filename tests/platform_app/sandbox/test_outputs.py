"""What leaves a sandbox is data: a build output holding links out, a fifo or a device ends the deployment `error`
naming the path and publishes nothing; the platform checks an uploaded archive again by the same rules, writing
nothing through a link, and any depth of folders packs, unpacks and is removed."""
import io
import tarfile
import time

import pytest

from platform_app.models import Deployment
from tests.platform_app.sandbox.conftest import deploy, log_text

pytestmark = pytest.mark.django_db

LINKS = {
    "env.txt": "ln -s /proc/self/environ out/env.txt",
    "key.pem": "ln -s {data}/jwt-private.pem out/key.pem",
    "hostname": "ln -s /etc/hostname out/hostname",
    "root": "ln -s / out/root",
    "up": "ln -s ../../.. out/up",
}


@pytest.mark.parametrize("name", sorted(LINKS))
def test_an_output_with_a_link_out_publishes_nothing(name, alice_client, make_project, sandbox, client,
                                                    django_capture_on_commit_callbacks):
    command = "mkdir -p out && echo '<h1>site</h1>' > out/index.html && " + LINKS[name].format(data=sandbox.DATA_DIR)
    project = make_project(f"links-{name.replace('.', '-')}", {"README": "x"}, build_command=command,
                           output_directory="out")
    started = time.monotonic()
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert time.monotonic() - started < 30  # nothing was walked or read through the link
    assert deployment.status == "error"
    assert deployment.error_message.startswith(f"The output was refused: {name}: a link to ")
    assert not (sandbox.ARTIFACT_ROOT / deployment.pk).exists() and not deployment.artifact_sha256
    assert client.get(f"/{name}", HTTP_HOST=f"{project.slug}.localhost").status_code == 404


def test_a_fifo_in_the_output_is_refused_without_stalling(alice_client, make_project, sandbox,
                                                         django_capture_on_commit_callbacks):
    project = make_project("fifo", {"README": "x"}, build_command="mkdir -p out && mkfifo out/pipe",
                           output_directory="out")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "error" and deployment.error_message == \
        "The output was refused: pipe: a fifo, not a file."


def test_links_inside_the_output_are_kept_and_served(alice_client, make_project, sandbox, client,
                                                    django_capture_on_commit_callbacks):
    command = "mkdir -p out/v2 && echo '<h1>v2</h1>' > out/v2/index.html && ln -s v2/index.html out/latest.html"
    project = make_project("inside", {"README": "x"}, build_command=command, output_directory="out")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "ready", deployment.error_message
    assert client.get("/latest.html", HTTP_HOST="inside.localhost").content == b"<h1>v2</h1>\n"
    assert "Output: 3 files" in log_text(deployment)


def test_a_repository_link_out_is_dropped_from_the_source_and_not_followed_by_the_platform(
        alice_client, make_project, sandbox, django_capture_on_commit_callbacks):
    import os

    project = make_project("repo-links", {"index.html": "ok"})
    repo = sandbox.GIT_HOSTED_ROOT / project.workspace.pk / "repo-links"
    os.symlink(str(sandbox.DATA_DIR / "jwt-private.pem"), repo / "package.json")  # detection and the scanner read it
    import subprocess

    subprocess.run(["git", "-C", str(repo), "-c", "user.email=d@e.f", "-c", "user.name=D", "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=d@e.f", "-c", "user.name=D", "commit", "-qm", "links"],
                   check=True)
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    text = log_text(deployment)
    assert deployment.status == "ready", deployment.error_message
    assert "Skipped the link package.json: it points outside the repository." in text
    from platform_app.models import SecretFinding

    # the platform's clone holds the links as small files naming their target: the scanner, which would have
    # found the private key behind package.json, read only a path
    assert not SecretFinding.objects.filter(project=project).exists()


def _archive(entries) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, kind, value in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
            else:
                info.type, info.linkname = (tarfile.SYMTYPE if kind == "link" else tarfile.LNKTYPE), value
                tar.addfile(info)
    return buffer.getvalue()


@pytest.fixture
def claimed_job(sandbox, workspace):
    """A build a builder has claimed: the deployment building, the job's token in hand."""
    from platform_app.services.deployments.build_jobs import _claim_one
    from tests.platform_app.agents.factories import AgentNodeFactory
    from tests.platform_app.deployments.factories import BuildJobFactory
    from tests.platform_app.projects.factories import ProjectFactory

    job = BuildJobFactory(deployment__project=ProjectFactory(workspace=workspace, slug="uploaded"))
    node = AgentNodeFactory(workspace=None, runtimes=["build"])
    wire = _claim_one(node)
    return job, wire["token"]


@pytest.mark.parametrize("entries,reason", [
    ([("index.html", "file", b"ok"), ("env.txt", "link", "/proc/self/environ")],
     "env.txt: a link to /proc/self/environ"),
    ([("a/../../escape", "file", b"x")], "not a plain relative path"),
    ([("index.html", "file", b"ok"), ("copy", "hard", "/etc/passwd")], "copy: a hard link, device or fifo"),
])
def test_the_platform_checks_an_uploaded_archive_again(claimed_job, api, entries, reason):
    job, token = claimed_job
    resp = api.put(f"/v1/builds/{job.pk}/artifact", data=_archive(entries), content_type="application/octet-stream",
                   HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 400 and resp.json()["code"] == "output_refused"
    assert reason in resp.json()["message"]
    deployment = Deployment.objects.get(pk=job.pk)
    assert deployment.status == "error" and reason in deployment.error_message and not deployment.artifact_sha256


def test_job_routes_need_the_job_token(claimed_job, api):
    job, token = claimed_job
    for method, path in (("get", "source"), ("post", "logs"), ("put", "artifact"), ("post", "finish")):
        resp = getattr(api, method)(f"/v1/builds/{job.pk}/{path}", HTTP_AUTHORIZATION="Bearer bld_wrong")
        assert resp.status_code == 401 and resp.json()["code"] == "invalid_job_token", path
    assert api.post(f"/v1/builds/{job.pk}/logs", {"lines": [{"text": "hi"}]}, format="json",
                    HTTP_AUTHORIZATION=f"Bearer {token}").json() == {"canceled": False}
    assert api.put(f"/v1/builds/{job.pk}/artifact", data=b"not gzip", content_type="application/octet-stream",
                   HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 400


def _links_past_path_max(*, with_file: bool) -> bytes:
    """An archive whose links look inside but resolve out: 16 folders of 247 characters, each reached through a
    one-letter link, a link 16 levels up at the bottom (its full path is longer than PATH_MAX, so resolving it
    by path gives up), `escape` two levels above that (spelled inside, really the artifact folder's parent's
    parent), then a file written through `escape`."""
    folder, steps, path = "d" * 247, "abcdefghijklmnop", ""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(name, kind, value=b""):
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, value
            else:
                info.size = len(value)
            tar.addfile(info, io.BytesIO(value) if kind == "file" else None)

        add("index.html", "file", b"<h1>site</h1>")
        for step in steps:
            add(f"{path}{folder}", "dir")
            add(f"{path}{step}", "link", folder)
            path += folder + "/"
        bottom = "/".join(steps) + "/" + "l" * 254
        add(bottom, "link", "/".join([".."] * len(steps)))
        add("escape", "link", bottom + "/../..")
        if with_file:
            add("escape/planted.txt", "file", b"written outside")
    return buffer.getvalue()


@pytest.fixture
def workspace_builder(alice_client, api):
    """A node an admin of acme joined with the `build` capability, through the API: its id and token."""
    invite = alice_client.post("/v1/orgs/acme/agents/invite", format="json")
    assert invite.status_code == 201, invite.content
    joined = api.post("/v1/agents/join", {"token": invite.json()["token"], "name": "own-builder",
                                          "runtimes": ["build"]}, format="json")
    assert joined.status_code == 200, joined.content
    return joined.json()["nodeId"], joined.json()["nodeToken"]


@pytest.mark.parametrize("shape", ["links-past-path-max", "file-through-them", "spelled-inside"])
def test_an_upload_whose_links_lead_out_is_refused_and_writes_nothing_outside(
        shape, alice_client, api, make_project, sandbox, workspace_builder, tmp_path,
        django_capture_on_commit_callbacks):
    sandbox.BUILD_INLINE = False
    deployment = deploy(alice_client, make_project("own-build", {"index.html": "x"}),
                        django_capture_on_commit_callbacks)
    node_id, node_token = workspace_builder
    claim = api.post(f"/v1/agents/{node_id}/builds/claim", {"wait": 0}, format="json",
                     HTTP_AUTHORIZATION=f"Bearer {node_token}")
    assert claim.status_code == 200 and claim.json()["id"] == deployment.pk
    before = sorted(p.name for p in tmp_path.iterdir())

    if shape == "spelled-inside":  # d1/up is the folder itself: d1/up/../.. is its parent, spelled as itself
        archive, refused = _archive([("d1/up", "link", ".."), ("escape", "link", "d1/up/../..")]), \
            "escape: a link to d1/up/../.., which leads outside the archive"
    else:  # the first member below a link is refused; it would resolve past PATH_MAX
        archive, refused = _links_past_path_max(with_file=shape == "file-through-them"), \
            "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/" + "l" * 254 + ": a path through a link"

    resp = api.put(f"/v1/builds/{deployment.pk}/artifact", data=archive, content_type="application/octet-stream",
                   HTTP_AUTHORIZATION=f"Bearer {claim.json()['token']}")

    assert resp.status_code == 400 and resp.json()["code"] == "output_refused", resp.content
    assert refused in resp.json()["message"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "artifacts") == before  # nothing planted
    assert not (tmp_path / "planted.txt").exists()
    assert list(sandbox.ARTIFACT_ROOT.iterdir()) == []  # neither the artifact nor a half-unpacked copy
    deployment.refresh_from_db()
    assert deployment.status == "error" and refused in deployment.error_message and not deployment.artifact_sha256


@pytest.fixture
def deep_folders_removed(tmp_path):
    """pytest's own clean-up of old temporary folders recurses: nothing 1,200 deep may stay behind."""
    yield
    from platform_app.sandbox.files import remove_tree

    for child in tmp_path.iterdir():
        remove_tree(child)


def test_an_output_nested_1200_folders_deep_is_built_and_the_build_folder_removed(
        alice_client, make_project, sandbox, deep_folders_removed, django_capture_on_commit_callbacks):
    script = ("set -e\nd=$(printf 'd/%.0s' $(seq 1200))\nmkdir -p out/$d work/$d\n"
              "echo bottom > out/${d}leaf.txt\necho scratch > work/${d}leaf.txt\n"
              "echo '<h1>deep</h1>' > out/index.html\n")
    project = make_project("deep", {"deep.sh": script}, build_command="sh deep.sh", output_directory="out")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "ready", deployment.error_message
    assert (sandbox.ARTIFACT_ROOT / deployment.pk / "index.html").read_text() == "<h1>deep</h1>\n"
    deep = "/".join(["d"] * 1200)
    assert (sandbox.ARTIFACT_ROOT / deployment.pk / deep / "leaf.txt").read_text() == "bottom\n"
    assert list(sandbox.BUILD_ROOT.iterdir()) == []  # the build folder, its workspace 1,200 deep, is gone
