"""`svc`, the command-line client, as a user runs it: a process without Django against the production server,
its builder and worker. Signed in by the device flow approved in Chromium on /device; a token made with scopes
and an expiry; a real folder with a `.gitignore` deployed, built and served; env pulled back through dotenv;
refusals — a failed build, not signed in, a token without `deploy`, the server down."""
import json
import os
import subprocess
import sys

import httpx
import pytest
from dotenv import dotenv_values
from playwright.sync_api import expect

from tests.processes import ROOT

pytestmark = pytest.mark.slow

SETUP = """
import json
from platform_app.models import User
from platform_app.services.teams.workspaces import workspace_create
workspace_create(user=User.objects.get(email=%r), name="Terminal", slug="cli-browser")
print(json.dumps(True))
"""


def svc_env(live_platform, config) -> dict:
    return {"PATH": os.environ["PATH"], "XDG_CONFIG_HOME": str(config), "SVC_API_URL": live_platform.url,
            "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "120"}


def svc(env, *args, cwd, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "platform_app.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def served(live_platform, slug: str, path: str = "/") -> httpx.Response:
    return httpx.get(f"{live_platform.url}{path}", headers={"Host": f"{slug}.localhost:{live_platform.port}"})


def test_login_in_the_browser_then_tokens_deploy_env_and_refusals(live_platform, new_page, tmp_path):
    owner = live_platform.create_user(name="Terminal")
    live_platform.script(SETUP % owner["email"])
    env = svc_env(live_platform, tmp_path / "config")

    # svc login: the code it prints is approved on /device, in a signed-in browser
    login = subprocess.Popen([sys.executable, "-m", "platform_app.cli", "login", "--no-browser",
                              "--scopes", "read,deploy,env:read,env:write,admin"],
                             env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = login.stderr.readline()
        assert "one-time code" in first, first
        code = first.rsplit(" ", 1)[1].strip()
        page = new_page()
        live_platform.sign_in(page, owner["email"])
        page.goto(live_platform.url + "/device")
        page.get_by_label("The code your terminal shows").fill(code)
        page.get_by_role("button", name="Continue").click()
        expect(page.get_by_text(f"asks with the code {code}")).to_be_visible()
        page.get_by_label("Workspace").select_option("cli-browser")
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("status")).to_contain_text("Approved")
        out, err = login.communicate(timeout=60)
    finally:
        login.kill()
    assert login.returncode == 0, err
    assert f"as {owner['email']}" in out + err
    assert (tmp_path / "config" / "svc" / "credentials.json").stat().st_mode & 0o777 == 0o600

    # svc tokens create: the document's options, checked through the API with the token it printed
    made = svc(env, "--json", "tokens", "create", "--name", "ci", "--scopes", "read", "--expires", "30d",
               cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    token = json.loads(made.stdout)
    me = httpx.get(f"{live_platform.url}/v1/user/tokens", headers={"Authorization": f"Bearer {token['token']}"})
    assert me.status_code == 200, me.text
    listed = {t["name"]: t for t in me.json()["items"]}
    assert listed["ci"]["scopes"] == ["read"] and listed["ci"]["expiresAt"]

    # svc deploy of a real folder: what .gitignore names is never sent, so never served
    folder = tmp_path / "cli-site"
    folder.mkdir()
    (folder / "index.html").write_text("<h1>Deployed from a terminal</h1>")
    (folder / "notes.txt").write_text("private notes")
    (folder / ".gitignore").write_text("notes.txt\n")
    linked = svc(env, "link", "--yes", cwd=folder)
    assert linked.returncode == 0, linked.stderr
    deployed = svc(env, "--json", "deploy", "--prod", cwd=folder)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr + live_platform.logs()
    result = json.loads(deployed.stdout)
    assert result["status"] == "ready" and result["url"], result
    assert served(live_platform, "cli-site").text == "<h1>Deployed from a terminal</h1>"
    assert served(live_platform, "cli-site", "/notes.txt").status_code == 404

    # svc env: added, then pulled into a file the project's dotenv parser reads back
    assert svc(env, "env", "add", "GREETING", 'it\'s "quoted"', cwd=folder).returncode == 0
    pulled = svc(env, "env", "pull", str(tmp_path / "pulled.env"), cwd=folder)
    assert pulled.returncode == 0, pulled.stderr
    assert dotenv_values(tmp_path / "pulled.env", interpolate=False) == {"GREETING": 'it\'s "quoted"'}

    # refusals: a failed build (exit 1, its error lines), a token without `deploy`, not signed in, the server down
    (folder / "package.json").write_text(json.dumps({"scripts": {"build": "echo about to fail && exit 3"}}))
    failed = svc(env, "deploy", cwd=folder)
    assert failed.returncode == 1 and "about to fail" in failed.stdout + failed.stderr, failed.stdout + failed.stderr
    (folder / "package.json").unlink()
    reader = svc({**env, "SVC_TOKEN": token["token"]}, "deploy", cwd=folder)
    assert reader.returncode == 1 and "`deploy` scope" in reader.stdout + reader.stderr
    stranger = svc(svc_env(live_platform, tmp_path / "empty-config"), "whoami", cwd=tmp_path)
    assert stranger.returncode == 2 and "svc login" in stranger.stderr and "Traceback" not in stranger.stderr
    down = svc({**env, "SVC_API_URL": "http://127.0.0.1:9", "SVC_TOKEN": token["token"]}, "whoami", cwd=tmp_path)
    assert down.returncode == 1 and "Cannot reach" in down.stderr and "Traceback" not in down.stderr
