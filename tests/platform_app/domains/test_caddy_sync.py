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
