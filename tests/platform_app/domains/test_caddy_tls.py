"""TLS through a real Caddy: the platform loads its configuration into Caddy's admin API, Caddy asks the
platform (gunicorn, on a scratch database) before issuing a certificate on demand from its internal CA, and
proxies to the edge. A verified domain gets a certificate for its name and the deployed page; an unverified
one gets no certificate at all (the TLS handshake fails) until it is verified. With CADDY_FILE_SERVER, static
sites keep being served from the artifact folder with the platform stopped.

Everything on the platform's side (rows, artifact files, configuring Caddy) runs in `manage.py` children on the
scratch database, as the beat or a worker would."""
import json
import os
import ssl

import httpx
import pytest

from tests.processes import (LOOPBACK, Process, WebServer, child_env, django_script, free_port, port_open,
                             wait_until)
from tests.scratch_database import migrated_database

pytestmark = pytest.mark.slow  # needs the caddy binary (Debian package `caddy`, 2.6 or later)

SEED = """
import json
from django.conf import settings
from platform_app.models import Deployment, Domain
from platform_app.services.domains.caddy import caddy_sync
from tests.factories import WorkspaceFactory
from tests.platform_app.projects.factories import ProjectFactory

project = ProjectFactory(workspace=WorkspaceFactory(slug="tls"), slug="tls-site")
deployment = Deployment.objects.create(project=project, branch="main", status="ready", env="production")
deployment.artifact_path = deployment.pk
deployment.save()
project.production_deployment = deployment
project.save()
Domain.objects.create(project=project, name="www.example.com", status="verified", verification_token="0" * 32)
Domain.objects.create(project=project, name="pending.example.com", verification_token="1" * 32)
root = settings.ARTIFACT_ROOT / deployment.pk
root.mkdir(parents=True)
(root / "index.html").write_text("<h1>served over TLS</h1>")
(root / "404.html").write_text("<p>no such page</p>")
(root / "style.css").write_text("h1 {}")
print(json.dumps({"deployment": deployment.pk, "synced": caddy_sync()}))
"""

VERIFY_PENDING = """
import json
from platform_app.models import Domain
from platform_app.services.domains.caddy import caddy_sync

Domain.objects.filter(name="pending.example.com").update(status="verified")
print(json.dumps({"synced": caddy_sync()}))
"""


@pytest.fixture
def scratch(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with migrated_database(data_dir) as database:
        yield database


@pytest.fixture
def caddy(tmp_path):
    """`caddy run` with only its admin API on a free loopback port, its data in the test's folder."""
    admin = free_port()
    boot = tmp_path / "caddy-boot.json"
    boot.write_text(json.dumps({"admin": {"listen": f"{LOOPBACK}:{admin}"}}))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "caddy-data"),
           "XDG_CONFIG_HOME": str(tmp_path / "caddy-config")}
    process = Process("caddy", ["caddy", "run", "--config", boot], env=env, log_dir=tmp_path).start()
    try:
        wait_until(lambda: port_open(admin), timeout=20, what="Caddy's admin API", logs=[process])
        process.admin_url = f"http://{LOOPBACK}:{admin}"
        process.data_dir = tmp_path / "caddy-data"
        yield process
    finally:
        process.stop()


def https_get(port: int, name: str, verify, path: str = "/"):
    """GET `path` from Caddy on 127.0.0.1:`port` as a browser asking for `name` (SNI and Host)."""
    with httpx.Client(verify=verify, timeout=10) as client:
        return client.get(f"https://{LOOPBACK}:{port}{path}", headers={"Host": name},
                          extensions={"sni_hostname": name})


def test_caddy_serves_verified_domains_only(scratch, caddy, tmp_path):
    web_port, https = free_port(), free_port()
    env = child_env(data_dir=scratch.data_dir, database_url=scratch.url(), CADDY_ADMIN_URL=caddy.admin_url,
                    CADDY_TLS_ISSUER="internal", CADDY_UPSTREAM=f"{LOOPBACK}:{web_port}",
                    CADDY_ASK_URL=f"http://{LOOPBACK}:{web_port}/internal/caddy/ask", CADDY_LISTEN_HOST=LOOPBACK,
                    CADDY_HTTPS_PORT=https, CADDY_HTTP_PORT=free_port())
    web = WebServer(env=env, log_dir=tmp_path, port=web_port).start()
    try:
        seeded = django_script(env, SEED)
        assert seeded["synced"] is True, caddy.log_tail()
        wait_until(lambda: port_open(https), timeout=20, what="Caddy's HTTPS listener", logs=[caddy])

        # Caddy's internal CA, trusted for these requests only: the certificate must be valid for the name
        root = caddy.data_dir / "caddy" / "pki" / "authorities" / "local" / "root.crt"
        wait_until(root.exists, timeout=20, what="Caddy's internal CA", logs=[caddy])
        trusted = ssl.create_default_context(cafile=str(root))
        resp = https_get(https, "www.example.com", trusted)
        assert resp.status_code == 200, (resp.text[:300], caddy.log_tail(), web.log_tail())
        assert resp.text == "<h1>served over TLS</h1>"
        assert resp.headers["X-Deployment-Id"] == seeded["deployment"]

        with pytest.raises(httpx.ConnectError):  # Caddy asked, the platform said no: no certificate
            https_get(https, "pending.example.com", False)
        with pytest.raises(httpx.ConnectError):
            https_get(https, "unknown.example.org", False)

        # the refusal was the platform's answer: once verified, the same name gets its certificate and the page;
        # this time the platform loads the configuration with static sites served from the artifact folder
        assert django_script({**env, "CADDY_FILE_SERVER": "true"}, VERIFY_PENDING)["synced"] is True
        resp = https_get(https, "pending.example.com", trusted)
        assert resp.status_code == 200 and resp.text == "<h1>served over TLS</h1>"

        web.stop()  # the pages, the 404 page and the cache headers now come from Caddy alone
        page = https_get(https, "www.example.com", trusted)
        assert page.status_code == 200 and page.text == "<h1>served over TLS</h1>"
        assert page.headers["Server"] == "Caddy" and page.headers["X-Deployment-Id"] == seeded["deployment"]
        assert page.headers["Cache-Control"] == "public, max-age=0, must-revalidate"
        asset = https_get(https, "www.example.com", trusted, "/style.css")
        assert asset.text == "h1 {}" and asset.headers["Cache-Control"] == "public, max-age=3600"
        missing = https_get(https, "pending.example.com", trusted, "/nope")
        assert missing.status_code == 404 and missing.text == "<p>no such page</p>"
    finally:
        web.stop()
