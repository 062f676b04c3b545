"""A build reaches its package registry through the sandbox's egress proxy, which applies the outbound guard:
a registry on an address SANDBOX_EGRESS_ALLOWED_NETWORKS opens is reached (pip and npm, from local servers that
speak their wire formats), loopback the settings do not open is refused (403), even on the same machine."""
import base64
import hashlib
import io
import json
import shutil
import tarfile
import zipfile

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from tests.platform_app.sandbox.conftest import deploy, log_text

pytestmark = pytest.mark.django_db
REGISTRY_HOST = "127.0.0.2"  # loopback too, but another address: the one the test's settings open


@pytest.fixture
def registry(sandbox):
    server = HTTPServer(host=REGISTRY_HOST, threaded=True)
    server.start()
    sandbox.SANDBOX_EGRESS_ALLOWED_NETWORKS = [f"{REGISTRY_HOST}/32"]
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def secret_service():
    """A service on 127.0.0.1, which the settings do not open to sandboxes."""
    server = HTTPServer(host="127.0.0.1")
    server.expect_request("/").respond_with_data("the platform's own service")
    server.start()
    yield server
    server.stop()


def _wheel() -> bytes:
    files = {"probe_pkg/__init__.py": 'MESSAGE = "probe-pkg from the local index"\n',
             "probe_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: probe-pkg\nVersion: 1.0\n",
             "probe_pkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n"}
    files["probe_pkg-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + \
        "probe_pkg-1.0.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return buffer.getvalue()


def _npm_tarball() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in {"package/package.json": json.dumps({"name": "probe-npm", "version": "1.0.0",
                                                                 "main": "index.js"}),
                           "package/index.js": 'module.exports = "probe-npm from the local registry";\n'}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def _set_env(client, project, variables: dict):
    for key, value in variables.items():
        resp = client.post(f"/v1/orgs/acme/projects/{project.pk}/env",
                           {"key": key, "value": value, "target": ["production"]}, format="json")
        assert resp.status_code == 201, resp.content


def test_pip_install_reaches_its_index_through_the_egress_and_loopback_stays_closed(
        registry, secret_service, alice_client, make_project, django_capture_on_commit_callbacks):
    wheel = _wheel()
    digest = hashlib.sha256(wheel).hexdigest()
    name = "probe_pkg-1.0-py3-none-any.whl"
    registry.expect_request("/simple/probe-pkg/").respond_with_data(
        f'<html><body><a href="/packages/{name}#sha256={digest}">{name}</a></body></html>', content_type="text/html")
    registry.expect_request(f"/packages/{name}").respond_with_data(wheel, content_type="application/octet-stream")
    refused = (f"curl -sS -o /dev/null -w '%{{http_code}}' --noproxy '' -x http://127.0.0.1:3128 "
               f"{secret_service.url_for('/')}")
    project = make_project("pip-app", {
        "requirements.txt": "probe-pkg==1.0\n", "app.py": "print('app')\n"},
        build_command=f"python3 -c 'import probe_pkg; print(probe_pkg.MESSAGE)' && echo \"loopback: $({refused})\"")
    _set_env(alice_client, project, {"PIP_INDEX_URL": registry.url_for("/simple/"), "PIP_TRUSTED_HOST": REGISTRY_HOST})
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    text = log_text(deployment)
    assert deployment.status == "ready", text
    assert "$ pip install -r requirements.txt" in text and "Successfully installed probe-pkg-1.0" in text
    assert "probe-pkg from the local index" in text
    assert "loopback: 403" in text and "the platform's own service" not in text
    assert [r.path for r, _ in registry.log] == ["/simple/probe-pkg/", f"/packages/{name}"]
    assert len(secret_service.log) == 0  # nothing of the build ever got there


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed on this machine")
def test_npm_install_reaches_its_registry_through_the_egress(registry, alice_client, make_project,
                                                             django_capture_on_commit_callbacks):
    tarball = _npm_tarball()
    url = registry.url_for("/probe-npm/-/probe-npm-1.0.0.tgz")
    packument = {"name": "probe-npm", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
        "name": "probe-npm", "version": "1.0.0", "main": "index.js",
        "dist": {"tarball": url, "shasum": hashlib.sha1(tarball).hexdigest(),
                 "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}}}}
    registry.expect_request("/probe-npm").respond_with_json(packument)
    registry.expect_request("/probe-npm/-/probe-npm-1.0.0.tgz").respond_with_response(
        Response(tarball, content_type="application/octet-stream"))
    package = {"name": "npm-app", "version": "1.0.0", "dependencies": {"probe-npm": "1.0.0"},
               "scripts": {"build": "node -e \"console.log(require('probe-npm'))\""}}
    project = make_project("npm-app", {"package.json": json.dumps(package)}, output_directory=".")
    _set_env(alice_client, project, {"NPM_CONFIG_REGISTRY": registry.url_for("/"), "NPM_CONFIG_AUDIT": "false",
                                     "NPM_CONFIG_FUND": "false", "NPM_CONFIG_UPDATE_NOTIFIER": "false"})
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    text = log_text(deployment)
    assert deployment.status == "ready", text
    assert "$ npm install" in text and "probe-npm from the local registry" in text
    assert "/probe-npm/-/probe-npm-1.0.0.tgz" in [r.path for r, _ in registry.log]
