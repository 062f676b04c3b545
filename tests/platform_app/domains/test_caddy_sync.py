"""The platform's configuration pushed to Caddy's admin API (a local HTTP server stands in for Caddy's admin
listener here; tests/platform_app/domains/test_caddy_tls.py drives a real Caddy): after a domain is verified,
made primary or removed, and on beat; nothing without CADDY_ADMIN_URL; a refusal never fails the API call."""
import json

import pytest

from platform_app.models import Domain
from platform_app.tasks.domains import caddy_sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(httpserver, settings):
    settings.CADDY_ADMIN_URL = httpserver.url_for("/").rstrip("/")
    settings.CADDY_UPSTREAM, settings.CADDY_ASK_URL = "10.0.0.5:8000", "http://10.0.0.5:8000/internal/caddy/ask"
    settings.CADDY_HTTPS_PORT, settings.CADDY_HTTP_PORT = 443, 80
    settings.CADDY_TLS_ISSUER, settings.CADDY_ACME_EMAIL = "acme", "ops@example.com"
    return httpserver


def loads(httpserver) -> list[dict]:
    return [json.loads(request.data) for request, _ in httpserver.log if request.path == "/load"]


def test_a_verified_domain_pushes_the_configuration(alice_client, url, zone, admin_api,
                                                    django_capture_on_commit_callbacks):
    admin_api.expect_request("/load", method="POST").respond_with_data("", status=200)
    created = alice_client.post(url, {"name": "www.example.com"}, format="json").json()
    assert loads(admin_api) == []  # pending: nothing for Caddy to learn
    zone.set("www.example.com", "CNAME", "cname.localhost")
    with django_capture_on_commit_callbacks(execute=True):
        assert alice_client.post(f"{url}/{created['id']}/verify", {}, format="json").status_code == 201
    (config,) = loads(admin_api)
    assert config["admin"] == {"listen": admin_api.url_for("/").split("//")[1].rstrip("/")}
    server = config["apps"]["http"]["servers"]["platform"]
    assert server["listen"] == [":443"] and server["tls_connection_policies"] == [{}]
    assert server["routes"][0]["handle"][0] == {"handler": "reverse_proxy", "upstreams": [{"dial": "10.0.0.5:8000"}],
                                                  "flush_interval": -1}
    redirect = config["apps"]["http"]["servers"]["redirect"]
    assert redirect["listen"] == [":80"]
    assert redirect["routes"][0]["handle"][0]["headers"]["Location"] == ["https://{http.request.host}"
                                                                         "{http.request.uri}"]
    automation = config["apps"]["tls"]["automation"]
    assert automation["on_demand"] == {"ask": "http://10.0.0.5:8000/internal/caddy/ask"}
    assert automation["policies"] == [{"issuers": [{"module": "acme", "email": "ops@example.com"}], "on_demand": True}]
    assert "pki" not in config["apps"]
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.delete(f"{url}/{created['id']}")
    assert len(loads(admin_api)) == 2


def test_a_refusal_is_logged_and_the_api_call_stands(alice_client, url, zone, admin_api, caplog,
                                                      django_capture_on_commit_callbacks):
    admin_api.expect_request("/load", method="POST").respond_with_data("bad config", status=400)
    created = alice_client.post(url, {"name": "www.example.com"}, format="json").json()
    zone.set("www.example.com", "A", "203.0.113.10")
    with django_capture_on_commit_callbacks(execute=True):
        resp = alice_client.post(f"{url}/{created['id']}/verify", {}, format="json")
    assert resp.status_code == 201 and Domain.objects.get().status == "verified"
    assert "Caddy refused the configuration (400)" in caplog.text
    assert caddy_sync() is False


def test_beat_pushes_again_and_nothing_without_caddy(admin_api, settings):
    admin_api.expect_request("/load", method="POST").respond_with_data("", status=200)
    settings.CADDY_TLS_ISSUER = "internal"
    assert caddy_sync() is True
    (config,) = loads(admin_api)
    assert config["apps"]["tls"]["automation"]["policies"][0]["issuers"] == [{"module": "internal"}]
    assert config["apps"]["pki"]["certificate_authorities"]["local"]["install_trust"] is False
    settings.CADDY_ADMIN_URL = ""
    assert caddy_sync() is False
    assert len(loads(admin_api)) == 1


def test_an_unreachable_caddy_is_logged(settings, caplog):
    from tests.processes import free_port

    settings.CADDY_ADMIN_URL, settings.CADDY_TIMEOUT_SECONDS = f"http://127.0.0.1:{free_port()}", 1.0
    assert caddy_sync() is False
    assert "did not answer" in caplog.text


@pytest.fixture
def file_server(admin_api, settings, tmp_path):
    settings.CADDY_FILE_SERVER, settings.CADDY_ARTIFACT_ROOT = True, "/srv/artifacts"
    admin_api.expect_request("/load", method="POST").respond_with_data("", status=200)
    return admin_api


def served_from_disk(config) -> dict:
    """host → the folder Caddy serves it from."""
    found = {}
    for route in config["apps"]["http"]["servers"]["platform"]["routes"]:
        if "match" in route:
            (host,) = route["match"][0]["host"]
            found[host] = route["handle"][0]["routes"][0]["handle"][0]["root"]
    return found


def test_caddy_serves_plain_static_sites_from_disk(project, workspace, file_server):
    from platform_app.models import AnalyticsSettings, FirewallRule
    from platform_app.services.domains.caddy import caddy_config
    from tests.platform_app.domains.factories import DomainFactory, ready_deployment
    from tests.platform_app.projects.factories import ProjectFactory

    static = DomainFactory(project=project, name="www.example.com", status="verified")
    DomainFactory(project=project, name="pending.example.com")
    DomainFactory(project=project, name="old.example.com", status="verified", redirect_to="www.example.com")
    DomainFactory(project=project, name="staging.example.com", status="verified", git_branch="staging")
    guarded, counted, running = (ProjectFactory(workspace=workspace, slug=s) for s in ("guarded", "counted", "app"))
    for other, name in ((guarded, "guarded.example.com"), (counted, "counted.example.com"),
                        (running, "app.example.com")):
        ready_deployment(other, {"index.html": "x"})
        DomainFactory(project=other, name=name, status="verified")
    FirewallRule.objects.create(project=guarded, name="block", action="deny",
                                conditions=[{"field": "path", "op": "prefix", "value": "/admin"}])
    AnalyticsSettings.objects.create(project=counted, enabled=True)
    running.production_deployment.snapshot = {"start": "node server.js"}
    running.production_deployment.save()

    config = caddy_config()
    deployment = project.production_deployment
    assert served_from_disk(config) == {"www.example.com": f"/srv/artifacts/{deployment.artifact_path}"}
    site = config["apps"]["http"]["servers"]["platform"]["routes"][0]["handle"][0]["routes"]
    assert site[0]["handle"][1]["response"]["set"] == {"X-Deployment-Id": [deployment.pk],
                                                       "Cache-Control": ["public, max-age=3600"]}
    assert site[2]["handle"][0]["response"]["set"] == {"Cache-Control": ["public, max-age=0, must-revalidate"]}
    (error_route,) = config["apps"]["http"]["servers"]["platform"]["errors"]["routes"]
    assert error_route["match"] == [{"host": ["www.example.com"]}]
    # everything else still goes to the platform
    assert config["apps"]["http"]["servers"]["platform"]["routes"][-1]["handle"][0]["handler"] == "reverse_proxy"
    # a primary elsewhere turns this one into a redirect: the edge's job again
    DomainFactory(project=project, name="example.com", status="verified", primary=True)
    assert set(served_from_disk(caddy_config())) == {"example.com"}
    static.delete()
    assert set(served_from_disk(caddy_config())) == {"example.com"}


def test_what_a_host_serves_changing_pushes_again(alice_client, url, project, zone, file_server,
                                                  django_capture_on_commit_callbacks):
    from platform_app.services.domains.domains import domains_recheck
    from tests.platform_app.domains.factories import ready_deployment

    created = alice_client.post(url, {"name": "www.example.com"}, format="json").json()
    zone.set("www.example.com", "A", "203.0.113.10")
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(f"{url}/{created['id']}/verify", {}, format="json")
    assert list(served_from_disk(loads(file_server)[-1])) == ["www.example.com"]
    with django_capture_on_commit_callbacks(execute=True):
        domains_recheck(now=Domain.objects.get().next_check_at)  # still verified: a check pushes nothing
    assert len(loads(file_server)) == 1
    with django_capture_on_commit_callbacks(execute=True):
        newer = ready_deployment(project, {"index.html": "v2"})  # promoted: the project now points at it
    assert served_from_disk(loads(file_server)[-1])["www.example.com"].endswith(newer.artifact_path)
