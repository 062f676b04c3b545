"""TLS through a real Caddy: the platform loads its configuration into Caddy's admin API, Caddy asks the
platform (gunicorn, on a scratch database) before issuing a certificate on demand from its internal CA, and
proxies to the edge. A verified domain gets a certificate for its name and the deployed page; an unverified
one gets no certificate at all (the TLS handshake fails)."""
import json
import os
import ssl

import httpx
import pytest

from tests.processes import LOOPBACK, Process, WebServer, child_env, free_port, manage, port_open, wait_until
from tests.scratch_database import ScratchDatabase, default_database

pytestmark = pytest.mark.slow  # needs the caddy binary (Debian package `caddy`, 2.6 or later)


@pytest.fixture
def scratch(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    database = ScratchDatabase(base_url=os.environ.get("DATABASE_URL"), data_dir=data_dir).create()
    try:
        manage(child_env(data_dir=data_dir, database_url=database.url()), "migrate", "--noinput")
        yield database
    finally:
        database.drop()


@pytest.fixture
def seeded(scratch, django_db_blocker):
    """A project whose production deployment is on disk, one verified and one pending domain (the rows the
    children read), written through this process's ORM."""
    from platform_app.models import Deployment, Domain
    from tests.factories import WorkspaceFactory
    from tests.platform_app.projects.factories import ProjectFactory

    with django_db_blocker.unblock(), default_database(scratch):
        project = ProjectFactory(workspace=WorkspaceFactory(slug="tls"), slug="tls-site")
        deployment = Deployment.objects.create(project=project, branch="main", status=Deployment.Status.READY,
                                               env="production")
        deployment.artifact_path = deployment.pk
        deployment.save()
        project.production_deployment = deployment
        project.save()
        Domain.objects.create(project=project, name="www.example.com", status=Domain.Status.VERIFIED,
                              verification_token="0" * 32)
        Domain.objects.create(project=project, name="pending.example.com", verification_token="1" * 32)
    root = scratch.data_dir / "artifacts" / deployment.pk
    root.mkdir(parents=True)
    (root / "index.html").write_text("<h1>served over TLS</h1>")
    (root / "404.html").write_text("<p>no such page</p>")
    (root / "style.css").write_text("h1 {}")
    return deployment


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


def test_caddy_serves_verified_domains_only(scratch, seeded, caddy, tmp_path, settings, django_db_blocker):
    from platform_app.models import Domain

    web = WebServer(env=child_env(data_dir=scratch.data_dir, database_url=scratch.url()), log_dir=tmp_path).start()
    try:
        from platform_app.services.domains.caddy import caddy_sync

        https = free_port()
        settings.CADDY_ADMIN_URL, settings.CADDY_TLS_ISSUER = caddy.admin_url, "internal"
        settings.CADDY_UPSTREAM = f"{LOOPBACK}:{web.port}"
        settings.CADDY_ASK_URL = f"{web.url}/internal/caddy/ask"
        settings.CADDY_LISTEN_HOST, settings.CADDY_HTTPS_PORT, settings.CADDY_HTTP_PORT = LOOPBACK, https, free_port()
        assert caddy_sync() is True, caddy.log_tail()
        wait_until(lambda: port_open(https), timeout=20, what="Caddy's HTTPS listener", logs=[caddy])

        # Caddy's internal CA, trusted for this request only: the certificate must be valid for the name
        root = caddy.data_dir / "caddy" / "pki" / "authorities" / "local" / "root.crt"
        wait_until(root.exists, timeout=20, what="Caddy's internal CA", logs=[caddy])
        trusted = ssl.create_default_context(cafile=str(root))
        resp = https_get(https, "www.example.com", trusted)
        assert resp.status_code == 200, (resp.text[:300], caddy.log_tail(), web.log_tail())
        assert resp.text == "<h1>served over TLS</h1>"
        assert resp.headers["X-Deployment-Id"] == seeded.pk

        with pytest.raises(httpx.ConnectError):  # Caddy asked, the platform said no: no certificate
            https_get(https, "pending.example.com", False)
        with pytest.raises(httpx.ConnectError):
            https_get(https, "unknown.example.org", False)
        # the refusal was the platform's answer: once verified, the same name gets its certificate and the page
        with django_db_blocker.unblock(), default_database(scratch):
            Domain.objects.filter(name="pending.example.com").update(status=Domain.Status.VERIFIED)
        resp = https_get(https, "pending.example.com", trusted)
        assert resp.status_code == 200 and resp.text == "<h1>served over TLS</h1>"

        # static sites straight from the artifact folder: they keep working with the platform stopped
        settings.CADDY_FILE_SERVER, settings.CADDY_ARTIFACT_ROOT = True, str(scratch.data_dir / "artifacts")
        with django_db_blocker.unblock(), default_database(scratch):
            assert caddy_sync() is True, caddy.log_tail()
        web.stop()
        page = https_get(https, "www.example.com", trusted)
        assert page.status_code == 200 and page.text == "<h1>served over TLS</h1>"
        assert page.headers["Server"] == "Caddy" and page.headers["X-Deployment-Id"] == seeded.pk
        assert page.headers["Cache-Control"] == "public, max-age=0, must-revalidate"
        asset = https_get(https, "www.example.com", trusted, "/style.css")
        assert asset.text == "h1 {}" and asset.headers["Cache-Control"] == "public, max-age=3600"
        missing = https_get(https, "pending.example.com", trusted, "/nope")
        assert missing.status_code == 404 and missing.text == "<p>no such page</p>"
    finally:
        web.stop()
