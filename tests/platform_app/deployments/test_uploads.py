"""Folders sent to be built (`POST P/sources`, `svc deploy`): checked like untrusted archives, kept once per
content, built in the sandbox exactly like a Git checkout, and served."""
import io
import tarfile

import pytest

from platform_app.models import Deployment, LogLine, Project, SourceUpload
from tests.platform_app.resources.s3_server import (ARTIFACTS_BUCKET, artifacts_bucket,  # noqa: F401 - fixtures
                                                    s3_endpoint)

pytestmark = pytest.mark.django_db


def tar_gz(files: dict, *, links: dict | None = None, extra=None) -> bytes:
    """A tar.gz of `files` (path → text), symbolic `links` (path → target) and `extra` TarInfo members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for path, target in (links or {}).items():
            info = tarfile.TarInfo(path)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for info in extra or ():
            tar.addfile(info)
    return buffer.getvalue()


@pytest.fixture
def upload_project(alice_client, settings, tmp_path):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    resp = alice_client.post("/v1/orgs/acme/projects", {"name": "Folder", "slug": "folder", "source": "upload",
                                                        "buildCommand": "mkdir -p out && cp -r site/. out/",
                                                        "outputDirectory": "out"}, format="json")
    assert resp.status_code == 201, resp.json()
    assert resp.json()["source"] == "upload"
    return Project.objects.get(pk=resp.json()["id"])


def send(client, project, body: bytes):
    return client.generic("POST", f"/v1/orgs/acme/projects/{project.pk}/sources", body,
                          content_type="application/gzip")


def test_an_uploaded_folder_is_built_in_the_sandbox_and_served(alice, alice_client, upload_project, client,
                                                               django_capture_on_commit_callbacks):
    body = tar_gz({"site/index.html": "<h1>Sent from a laptop</h1>", "site/about.html": "about"})
    sent = send(alice_client, upload_project, body)
    assert sent.status_code == 201, sent.json()
    source = sent.json()
    assert source["files"] == 2 and source["size"] == len(body) and len(source["sha256"]) == 64
    again = send(alice_client, upload_project, body)  # the same content: the same upload, stored once
    assert again.status_code == 201 and again.json()["id"] == source["id"] and SourceUpload.objects.count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        resp = alice_client.post(f"/v1/orgs/acme/projects/{upload_project.pk}/deployments",
                                 {"env": "production", "source": source["id"]}, format="json")
    assert resp.status_code == 201, resp.json()
    assert resp.json()["sourceId"] == source["id"] and resp.json()["branch"] == ""
    deployment = Deployment.objects.get()
    assert deployment.status == "ready", deployment.error_message
    assert LogLine.objects.filter(deployment=deployment, text__startswith="Unpacking the folder uploaded by "
                                                                          "alice@example.com").exists()
    assert client.get("/", HTTP_HOST="folder.localhost").content == b"<h1>Sent from a laptop</h1>"
    client.force_login(alice)
    page = client.get(f"/dashboard/acme/deployments/{deployment.pk}/")
    assert page.status_code == 200 and b"Uploaded by alice@example.com with the CLI" in page.content

    with django_capture_on_commit_callbacks(execute=True):  # no source named: the latest (a hook, a redeploy)
        resp = alice_client.post(f"/v1/orgs/acme/projects/{upload_project.pk}/deployments", {"env": "production"},
                                 format="json")
    assert resp.status_code == 201 and resp.json()["sourceId"] == source["id"]


@pytest.mark.parametrize("member", ["link out", "device", "hardlink"])
def test_archives_that_break_the_rules_are_refused_and_nothing_is_kept(alice_client, upload_project, member):
    if member == "device":
        info = tarfile.TarInfo("site/null")
        info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
        body = tar_gz({"site/index.html": "x"}, extra=[info])
    elif member == "hardlink":
        info = tarfile.TarInfo("site/shadow")
        info.type, info.linkname = tarfile.LNKTYPE, "/etc/shadow"
        body = tar_gz({"site/index.html": "x"}, extra=[info])
    else:
        body = tar_gz({"site/index.html": "x"}, links={"site/key": "/etc/shadow"})
    resp = send(alice_client, upload_project, body)
    assert resp.status_code == 400 and resp.json()["code"] == "upload_refused", resp.json()
    assert "site/" in resp.json()["message"] and not SourceUpload.objects.exists()


def test_the_limits_are_named(alice_client, upload_project, settings):
    settings.UPLOAD_MAX_BYTES = 100
    big = send(alice_client, upload_project, tar_gz({f"f{i}": "x" * 100 for i in range(20)}))
    assert big.status_code == 413 and big.json()["code"] == "upload_too_large"
    assert big.json()["details"]["limitBytes"] == 100
    settings.UPLOAD_MAX_BYTES, settings.UPLOAD_MAX_FILES = 10**6, 3
    many = send(alice_client, upload_project, tar_gz({f"f{i}": "x" for i in range(5)}))
    assert many.status_code == 400 and many.json()["code"] == "upload_too_many_files"
    assert many.json()["details"]["limitFiles"] == 3
    broken = send(alice_client, upload_project, b"not a tar.gz at all")
    assert broken.status_code == 400 and broken.json()["code"] == "upload_refused"
    assert not SourceUpload.objects.exists()


def test_a_token_without_deploy_is_refused_naming_the_scope(alice, as_token, upload_project, workspace):
    reader = as_token(alice, scopes=["read"])
    resp = send(reader, upload_project, tar_gz({"site/index.html": "x"}))
    assert resp.status_code == 403 and resp.json()["details"]["requiredScope"] == "deploy"


def test_an_upload_project_needs_an_upload_and_a_git_project_takes_none(alice_client, upload_project, workspace):
    from tests.platform_app.projects.factories import ProjectFactory

    none_yet = alice_client.post(f"/v1/orgs/acme/projects/{upload_project.pk}/deployments", {"env": "production"},
                                 format="json")
    assert none_yet.status_code == 400 and none_yet.json()["code"] == "no_source"
    git = ProjectFactory(workspace=workspace, git_url="https://example.com/x.git")
    resp = alice_client.post(f"/v1/orgs/acme/projects/{git.pk}/deployments", {"env": "production",
                                                                            "source": "src_nope"}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "not_an_upload_project"
    assert not Deployment.objects.exists()


def test_deleting_the_project_removes_its_uploads_and_built_archives_from_storage(
        alice_client, upload_project, django_capture_on_commit_callbacks):
    from platform_app.services.deployments.artifacts import artifact_name, storage

    source = send(alice_client, upload_project, tar_gz({"site/index.html": "kept until the project goes"})).json()
    with django_capture_on_commit_callbacks(execute=True):
        built = alice_client.post(f"/v1/orgs/acme/projects/{upload_project.pk}/deployments",
                                  {"env": "production", "source": source["id"]}, format="json")
    deployment = Deployment.objects.get(pk=built.json()["id"])
    assert deployment.status == "ready", deployment.error_message
    kept = [SourceUpload.objects.get().storage_name, artifact_name(deployment.pk)]
    assert all(storage().exists(name) for name in kept)

    with django_capture_on_commit_callbacks(execute=True):
        assert alice_client.delete(f"/v1/orgs/acme/projects/{upload_project.pk}").status_code == 200
    assert not any(storage().exists(name) for name in kept)
    assert not SourceUpload.objects.exists()


def test_uploads_kept_in_s3_compatible_storage_are_built_from_there_and_removed_with_the_project(
        alice_client, upload_project, artifacts_bucket, django_capture_on_commit_callbacks, client):
    """Artifact storage in a bucket of moto's S3-compatible server: the upload is kept there once, the build reads
    it from there, and deleting the project empties the bucket of it."""
    def keys():
        return sorted(o["Key"] for o in artifacts_bucket.list_objects_v2(Bucket=ARTIFACTS_BUCKET).get("Contents", []))

    body = tar_gz({"site/index.html": "<h1>From the bucket</h1>"})
    source = send(alice_client, upload_project, body).json()
    assert send(alice_client, upload_project, body).json()["id"] == source["id"]
    assert keys() == [f"sources/uploads/{upload_project.pk}/{source['sha256']}.tar.gz"]
    with django_capture_on_commit_callbacks(execute=True):
        built = alice_client.post(f"/v1/orgs/acme/projects/{upload_project.pk}/deployments",
                                  {"env": "production", "source": source["id"]}, format="json")
    deployment = Deployment.objects.get(pk=built.json()["id"])
    assert deployment.status == "ready", deployment.error_message
    assert client.get("/", HTTP_HOST="folder.localhost").content == b"<h1>From the bucket</h1>"
    assert f"artifacts/{deployment.pk}.tar.gz" in keys()
    with django_capture_on_commit_callbacks(execute=True):
        assert alice_client.delete(f"/v1/orgs/acme/projects/{upload_project.pk}").status_code == 200
    assert keys() == []
