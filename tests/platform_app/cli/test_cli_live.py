"""svc against the live test server: login --token, whoami, tokens create/ls/revoke, a 403 naming the scope."""
import json
import os
import stat

import pytest
from click.testing import CliRunner

from platform_app.cli.main import cli
from platform_app.models import ApiToken
from tests.factories import ApiTokenFactory

RAW = "svc_cli_test" + "c" * 36


@pytest.fixture
def svc(live_server, transactional_db, alice, workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SVC_TOKEN", raising=False)
    ApiTokenFactory(user=alice, scopes=["admin"], workspace=None, raw=RAW)

    def run(*args):
        return CliRunner().invoke(cli, ["--api", live_server.url, *args])
    return run


def test_login_whoami_and_tokens(svc, tmp_path):
    assert svc("login", "--token", RAW).exit_code == 0
    creds = tmp_path / "config" / "svc" / "credentials.json"
    assert stat.S_IMODE(os.stat(creds).st_mode) == 0o600
    me = json.loads(svc("whoami", "--json").output)
    assert me["user"]["email"] == "alice@example.com" and me["workspaces"][0]["slug"] == "acme"
    created = svc("tokens", "create", "--name", "ci", "--scopes", "read", "--expires", "30d", "--json")
    assert created.exit_code == 0, created.output
    token = json.loads(created.output)
    row = ApiToken.objects.get(pk=token["id"])
    assert row.scopes == ["read"] and row.expires_at is not None
    assert token["id"] in svc("tokens", "ls").output
    assert svc("tokens", "revoke", token["id"]).exit_code == 0
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_an_unknown_token_is_exit_2(svc, live_server):
    result = CliRunner().invoke(cli, ["--api", live_server.url, "--token", RAW.replace("c", "d"), "whoami"])
    assert result.exit_code == 2


def test_a_403_names_the_missing_scope(svc, live_server, alice):
    read_only = "svc_cli_read" + "r" * 36
    ApiTokenFactory(user=alice, scopes=["read"], workspace=None, raw=read_only)
    result = svc("--token", read_only, "tokens", "create", "--name", "x")
    assert result.exit_code == 1
    assert "insufficient_scope" in result.output and "`admin`" in result.output
    assert not ApiToken.objects.filter(name="x").exists()


def test_link_creates_an_upload_project_and_env_round_trips(svc, tmp_path, monkeypatch, workspace):
    from dotenv import dotenv_values

    from platform_app.models import Project

    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert svc("--token", RAW, "link", "--yes").exit_code == 0
    project = Project.objects.get(workspace=workspace, name="site")
    assert project.source == "upload"
    assert (folder / ".svc" / ".gitignore").read_text() == "*\n"
    tricky = 'a "quoted" \\ value\nwith a second line $HOME'
    assert svc("--token", RAW, "env", "add", "PLAIN", "one").exit_code == 0
    assert svc("--token", RAW, "env", "add", "SECRET", tricky, "--secret").exit_code == 0
    assert "PLAIN" in svc("--token", RAW, "env", "ls").output
    pulled = svc("--token", RAW, "env", "pull", "out.env")
    assert pulled.exit_code == 0, pulled.output
    assert dotenv_values(folder / "out.env", interpolate=False) == {"PLAIN": "one", "SECRET": tricky}
    assert svc("--token", RAW, "env", "rm", "PLAIN", "--yes").exit_code == 0
    assert "PLAIN" not in svc("--token", RAW, "env", "ls").output
