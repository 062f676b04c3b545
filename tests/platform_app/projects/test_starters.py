"""The shipped starters really build and serve offline with the commands detection gives them."""
import os
import shlex
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from platform_app.models import Project

pytestmark = pytest.mark.django_db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(git_server, file_url: str) -> str:
    """The hosted repository at `file_url`, published by the local Git server (users only give http(s))."""
    return git_server.serve(Path(unquote(urlsplit(file_url).path)))


def fetch(port: int, path: str = "/", attempts: int = 100) -> str:
    for _ in range(attempts):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as res:
                return res.read().decode()
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the starter never answered")


@pytest.mark.parametrize("template,expected", [("python-wsgi", "Hello from a Python WSGI app"),
                                               ("node-app", "Hello from a Node app")])
def test_starter_builds_and_serves_on_port(template, expected, alice, workspace, as_user, tmp_path, git_server):
    if template == "node-app" and shutil.which("node") is None:
        pytest.skip("node is not installed on this machine")
    client = as_user(alice)
    res = client.post("/v1/orgs/acme/projects/from-template", {"name": template, "template": template}, format="json")
    assert res.status_code == 201
    checkout = tmp_path / "app"
    hosted = Project.objects.get().git_url  # the platform's own file:// URL, never shown by the API
    subprocess.run(["git", "clone", "--quiet", hosted, str(checkout)], check=True)
    detected = client.post("/v1/framework/detect", {"url": served(git_server, hosted)}, format="json").json()
    env = {"PATH": os.environ["PATH"], "PORT": str(free_port())}
    if detected["buildCommand"]:
        subprocess.run(shlex.split(detected["buildCommand"]), cwd=checkout, env=env, check=True, capture_output=True)
    server = subprocess.Popen(shlex.split(detected["startCommand"]), cwd=checkout, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert expected in fetch(int(env["PORT"]))
        assert '"ok"' in fetch(int(env["PORT"]), "/health")
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_static_starter_has_its_page(alice, workspace, as_user, tmp_path, git_server):
    client = as_user(alice)
    body = client.post("/v1/orgs/acme/projects/from-template", {"name": "s", "template": "static-site"},
                       format="json").json()
    assert body["gitUrl"] is None and body["template"] == "static-site"
    url = Project.objects.get().git_url
    detected = client.post("/v1/framework/detect", {"url": served(git_server, url)}, format="json").json()
    assert detected["outputDirectory"] == "." and detected["evidence"] == ["index.html"]
    checkout = tmp_path / "site"
    subprocess.run(["git", "clone", "--quiet", url, str(checkout)], check=True)
    assert "<h1>It works</h1>" in (checkout / "index.html").read_text()
