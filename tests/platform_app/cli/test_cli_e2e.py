"""`svc` end to end against pytest-django's live server: a real folder linked, packed, uploaded, built in the
sandbox and served; env round-trips; rollback; a failed build; refusals; the login by device flow in a process
without Django, approved on the /device page."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from django.test import Client

from platform_app.cli.main import cli
from platform_app.models import ApiToken, Deployment, EnvVar, Project

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def svc(live_server, tmp_path, monkeypatch):
    """`svc(*args, token=...)` → Click's result; a clean config folder, the live server as the API."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SVC_API_URL", live_server.url)
    monkeypatch.delenv("SVC_TOKEN", raising=False)

    def run(*args, token=None, folder=None):
        env = {"SVC_TOKEN": token} if token else {}
        if folder is not None:
            monkeypatch.chdir(folder)
        return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)

    return run


@pytest.fixture
def token(alice, as_token):
    raw = "svc_cli" + "k" * 40
    from tests.factories import ApiTokenFactory

    ApiTokenFactory(user=alice, scopes=["admin"], raw=raw)
    return raw


@pytest.fixture
def folder(tmp_path):
    site = tmp_path / "laptop-site"
    (site / "site").mkdir(parents=True)
    (site / "site" / "index.html").write_text("<h1>From the CLI</h1>")
    (site / "site" / "notes.txt").write_text("private notes")
    (site / ".gitignore").write_text("site/notes.txt\n")
    return site


def test_login_with_a_token_then_whoami_and_logout(svc, token, alice):
    assert svc("whoami").exit_code == 2  # not logged in
    assert "Not signed in" in svc("whoami").output
    stored = svc("login", "--token", token)
    assert stored.exit_code == 0 and "alice@example.com" in stored.output
    credentials = Path(os.environ["XDG_CONFIG_HOME"]) / "svc" / "credentials.json"
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"
    me = svc("--json", "whoami")
    assert me.exit_code == 0 and json.loads(me.stdout)["workspaces"][0]["slug"] == "acme"
    assert svc("logout").exit_code == 0
    assert token not in (credentials.read_text() if credentials.exists() else "")
    assert svc("whoami").exit_code == 2


def test_tokens_create_ls_and_revoke_through_the_api(svc, token, alice):
    created = svc("--json", "tokens", "create", "--name", "ci", "--scopes", "read,deploy", "--expires", "30d",
                  token=token)
    assert created.exit_code == 0, created.output
    body = json.loads(created.stdout)
    row = ApiToken.objects.get(pk=body["id"])
    assert row.scopes == ["read", "deploy"] and row.expires_at is not None and body["token"].startswith("svc_")
    listed = svc("tokens", "ls", token=token)
    assert "ci" in listed.output
    assert svc("tokens", "revoke", body["id"], token=token).exit_code == 0
    assert ApiToken.objects.get(pk=body["id"]).revoked_at is not None
    refused = svc("tokens", "create", "--name", "x", "--scopes", "root", token=token)
    assert refused.exit_code == 1 and "(validation_error)" in refused.output


def test_link_deploy_env_and_rollback_of_a_real_folder(svc, token, folder, settings, tmp_path, client):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    linked = svc("link", "--yes", token=token, folder=folder)
    assert linked.exit_code == 0, linked.output
    project = Project.objects.get(slug="laptop-site")
    assert project.source == "upload" and (folder / ".svc" / ".gitignore").read_text() == "*\n"
    svc("--json", "link", "--yes", token=token)  # linking again finds the same project
    assert Project.objects.count() == 1
    Project.objects.filter(pk=project.pk).update(build_command="mkdir -p out && cp -r site/. out/",
                                                 output_directory="out")

    deployed = svc("--json", "deploy", "--prod", token=token)
    assert deployed.exit_code == 0, deployed.output
    result = json.loads(deployed.stdout)
    assert result["status"] == "ready" and result["url"]
    assert client.get("/", HTTP_HOST="laptop-site.localhost").content == b"<h1>From the CLI</h1>"
    assert client.get("/notes.txt", HTTP_HOST="laptop-site.localhost").status_code == 404  # ignored, never sent

    assert svc("env", "add", "GREETING", "it's \"quoted\"", token=token).exit_code == 0
    assert svc("env", "add", "PLAIN", "a$b", token=token).exit_code == 0
    assert "GREETING" in svc("env", "ls", token=token).output
    pulled = svc("env", "pull", str(tmp_path / "pulled.env"), token=token)
    assert pulled.exit_code == 0, pulled.output
    from dotenv import dotenv_values

    assert dotenv_values(tmp_path / "pulled.env", interpolate=False) == {"GREETING": "it's \"quoted\"", "PLAIN": "a$b"}
    assert svc("env", "rm", "PLAIN", "--yes", token=token).exit_code == 0
    assert list(EnvVar.objects.values_list("key", flat=True)) == ["GREETING"]

    (folder / "site" / "index.html").write_text("<h1>Second</h1>")
    assert svc("deploy", "--prod", token=token).exit_code == 0
    assert client.get("/", HTTP_HOST="laptop-site.localhost").content == b"<h1>Second</h1>"
    back = svc("rollback", "--yes", token=token)
    assert back.exit_code == 0, back.output
    assert client.get("/", HTTP_HOST="laptop-site.localhost").content == b"<h1>From the CLI</h1>"
    logs = svc("logs", Deployment.objects.order_by("created_at").first().pk, token=token)
    assert "Unpacking the folder uploaded by alice@example.com" in logs.output


def test_a_failed_build_exits_1_with_its_error_lines(svc, token, folder, settings, tmp_path):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    svc("link", "--yes", token=token, folder=folder)
    Project.objects.update(build_command="echo about to fail && exit 3")
    failed = svc("deploy", token=token)
    assert failed.exit_code == 1 and "about to fail" in failed.output and "Build error" in failed.output


def test_refusals_name_the_scope_the_limit_and_the_server(svc, alice, as_token, folder, settings, token):
    from tests.factories import ApiTokenFactory

    reader = "svc_reader" + "r" * 40
    ApiTokenFactory(user=alice, scopes=["read"], raw=reader)
    svc("link", "--yes", token=token, folder=folder)
    refused = svc("deploy", token=reader)
    assert refused.exit_code == 1 and "`deploy` scope" in refused.output and "insufficient_scope" in refused.output
    settings.UPLOAD_MAX_BYTES = 10
    too_big = svc("deploy", token=token)
    assert too_big.exit_code == 1 and "upload_too_large" in too_big.output and "The limit is 10 bytes" in too_big.output
    down = svc("--api", "http://127.0.0.1:9", "whoami", token=token)
    assert down.exit_code == 1 and "Cannot reach" in down.output and "Traceback" not in down.output


def test_login_by_device_flow_in_a_process_without_django(live_server, alice, tmp_path, settings):
    settings.DEVICE_POLL_INTERVAL_SECONDS = 1
    env = {"PATH": os.environ["PATH"], "XDG_CONFIG_HOME": str(tmp_path / "config"), "SVC_API_URL": live_server.url,
           "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "platform_app.cli", "login", "--scopes", "read,deploy"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        first = process.stderr.readline()
        assert "one-time code" in first, first
        code = first.rsplit(" ", 1)[1].strip()
        browser = Client()
        browser.force_login(alice)
        approved = browser.post("/device", {"code": code, "decision": "approve", "scopes": ["read", "deploy"]})
        assert approved.status_code == 200
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "as alice@example.com" in out + err
    stored = (tmp_path / "config" / "svc" / "credentials.json").read_text()
    token = ApiToken.objects.get()  # the one the device received, named for the client
    assert token.pk in stored and token.scopes == ["read", "deploy"] and token.user == alice
