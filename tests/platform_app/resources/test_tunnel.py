"""The tunnel through the HTTP API, the edge and the dashboard, without a client: state, start (the token shown
once, stored hashed, rotated by a new start), stop, who may do what, the reserved `-tunnel` slug ending, and what
the edge answers for a tunnel host without a connected client (503) or of no project (404).
tests/platform_app/resources/test_tunnel_relay.py serves requests through a real server and client."""
import pytest
from django.test import Client

from config.errors import ApplicationError
from platform_app.models import AuditEvent, Project, Tunnel, TunnelConnection, TunnelRequest
from platform_app.services.domains.routing import tls_allowed
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.resources import tunnels
from platform_app.tasks.tunnels import tunnels_prune
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.tunnel_factories import TunnelConnectionFactory, TunnelFactory, TunnelRequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop")


def url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/tunnel{rest}"


def edge(path="/file.txt", host="shop-tunnel.localhost", **extra):
    return Client().get(path, HTTP_HOST=host, **extra)


def test_a_tunnel_never_started_is_stopped_and_reading_writes_nothing(alice_client, project):
    resp = alice_client.get(url(project))
    assert resp.status_code == 200
    assert resp.json() == {"status": "stopped", "url": "http://shop-tunnel.localhost:8000/", "connectedSince": None,
                           "bytesIn": 0, "bytesOut": 0, "clients": 0, "startedAt": None}
    assert not Tunnel.objects.exists()


def test_start_shows_the_token_and_command_once_and_stores_its_hash(alice_client, project, settings):
    settings.SITE_URL = "https://platform.example.com"
    resp = alice_client.post(url(project, "/start"), {"port": 5173}, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    token = body["token"]
    assert token.startswith("svct_") and len(token) > 40
    assert body["command"] == (f"python manage.py tunnel --server https://platform.example.com --project {project.pk} "
                               f"--port 5173 --token {token}")
    assert body["status"] == "waiting" and body["clients"] == 0 and body["startedAt"]
    tunnel = Tunnel.objects.get(project=project)
    assert tunnel.token_hash == sha256_hex(token) and token not in str(Tunnel.objects.values().get())
    again = alice_client.get(url(project)).json()
    assert again["status"] == "waiting" and "token" not in again and "command" not in again
    assert AuditEvent.objects.filter(action="tunnel.started", target_id=tunnel.pk).exists()
    # the default port, with an empty body
    assert "--port 3000 " in alice_client.post(url(project, "/start")).json()["command"]


def test_a_new_start_rotates_the_token_and_ends_the_old_connections(alice_client, project):
    first = alice_client.post(url(project, "/start")).json()["token"]
    tunnel = Tunnel.objects.get()
    TunnelRequestFactory(connection=TunnelConnectionFactory(tunnel=tunnel))
    Tunnel.objects.filter(pk=tunnel.pk).update(bytes_in=10, bytes_out=20)
    assert alice_client.get(url(project)).json()["status"] == "connected"
    second = alice_client.post(url(project, "/start")).json()
    assert second["token"] != first and second["status"] == "waiting"
    assert second["bytesIn"] == 0 and second["bytesOut"] == 0  # counted since the last start
    assert not TunnelConnection.objects.exists() and not TunnelRequest.objects.exists()
    with pytest.raises(ApplicationError) as refused:
        tunnels.tunnel_authenticate(token=first)
    assert refused.value.status == 401
    assert tunnels.tunnel_authenticate(token=second["token"], project_ref="shop").pk == tunnel.pk


def test_stop_ends_connections_and_the_token(alice_client, project):
    token = alice_client.post(url(project, "/start")).json()["token"]
    TunnelConnectionFactory(tunnel=Tunnel.objects.get())
    resp = alice_client.post(url(project, "/stop"))
    assert resp.status_code == 201
    assert resp.json()["status"] == "stopped" and resp.json()["clients"] == 0
    assert Tunnel.objects.get().token_hash == "" and not TunnelConnection.objects.exists()
    with pytest.raises(ApplicationError):
        tunnels.tunnel_authenticate(token=token)
    assert AuditEvent.objects.filter(action="tunnel.stopped").count() == 1
    # stopping again (or a tunnel never started) changes nothing
    assert alice_client.post(url(project, "/stop")).json()["status"] == "stopped"
    other = ProjectFactory(workspace=project.workspace)
    assert alice_client.post(url(other, "/stop")).status_code == 201 and Tunnel.objects.count() == 1
    assert AuditEvent.objects.filter(action="tunnel.stopped").count() == 1


@pytest.mark.parametrize("body", [{"port": 0}, {"port": 65536}, {"port": "x"}, {"port": 80, "host": "a"}, [1]])
def test_bad_start_input_is_400_and_writes_nothing(alice_client, project, body):
    resp = alice_client.post(url(project, "/start"), body, format="json")
    assert resp.status_code == 400, resp.json()
    assert set(resp.json()) == {"code", "message", "details", "status"}
    assert not Tunnel.objects.exists()


def test_only_admins_start_and_stop_and_other_workspaces_get_404(project, bob, charlie, as_user, as_token, alice):
    TunnelFactory(project=project)
    developer = as_user(bob)
    assert developer.get(url(project)).status_code == 200
    for action in ("/start", "/stop"):
        resp = developer.post(url(project, action))
        assert resp.status_code == 403 and resp.json()["code"] == "forbidden"
        resp = as_token(alice, scopes=["read"]).post(url(project, action))
        assert resp.status_code == 403 and resp.json()["code"] == "insufficient_scope"
        assert as_user(charlie).post(url(project, action)).status_code == 404
    assert as_user(charlie).get(url(project)).status_code == 404
    assert Tunnel.objects.get().token_hash  # still started


def test_tokens_are_checked_against_the_project_named(project, workspace):
    tunnel = TunnelFactory(project=project, raw="svct_right-token")
    other = ProjectFactory(workspace=workspace, slug="other")
    for token, ref in (("svct_wrong", ""), ("", ""), ("svc_right-token", ""), ("svct_right-token", other.pk),
                       ("svct_right-token", "other")):
        with pytest.raises(ApplicationError) as refused:
            tunnels.tunnel_authenticate(token=token, project_ref=ref)
        assert refused.value.status == 401 and refused.value.code == "invalid_token"
    connection = tunnels.tunnel_connection_open(token="svct_right-token", project_ref=project.pk, client_ip="10.0.0.1")
    assert connection.tunnel == tunnel and connection.token_hash == tunnel.token_hash


# The reserved ending -------------------------------------------------------------------------------------------

def test_project_slugs_cannot_end_in_tunnel(alice_client, workspace):
    resp = alice_client.post("/v1/orgs/acme/projects/from-image", {"name": "Api", "imageRef": "nginx:1.27",
                                                                    "slug": "api-tunnel"}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "validation_error"
    assert resp.json()["details"] == {"slug": ["Ends in -tunnel."]}
    assert not Project.objects.exists()
    # a slug derived from such a name steps aside; `tunnel` alone is an ordinary slug
    derived = alice_client.post("/v1/orgs/acme/projects/from-image", {"name": "My Tunnel", "imageRef": "nginx:1.27"},
                                format="json")
    assert derived.status_code == 201 and derived.json()["slug"].startswith("my-tunnel-")
    assert not derived.json()["slug"].endswith("-tunnel")
    plain = alice_client.post("/v1/orgs/acme/projects/from-image", {"name": "T", "imageRef": "nginx:1.27",
                                                                    "slug": "tunnel"}, format="json")
    assert plain.status_code == 201


def test_tunnel_hosts_resolve_before_project_slugs(project, workspace):
    """A project slugged `shop-tunnel` from before the rule (made here through the ORM) cannot take the address of
    project `shop`'s tunnel."""
    ProjectFactory(workspace=workspace, slug="shop-tunnel")
    TunnelFactory(project=project)
    resp = edge()
    assert resp.status_code == 503 and resp.content == b"Tunnel not connected."
    assert edge(host="nobody-tunnel.localhost").status_code == 404


# The edge without a client -------------------------------------------------------------------------------------

def test_edge_answers_503_until_a_client_is_connected(alice_client, project, settings):
    assert edge().status_code == 503  # never started
    alice_client.post(url(project, "/start"))
    resp = edge()
    assert resp.status_code == 503 and resp["Cache-Control"] == "no-store"
    alice_client.post(url(project, "/stop"))
    assert edge().status_code == 503
    assert Client().post("/form", {"a": "1"}, HTTP_HOST="shop-tunnel.localhost").status_code == 503
    assert not TunnelRequest.objects.exists()


def test_a_connection_not_seen_for_the_ttl_no_longer_counts(project, travel):
    TunnelConnectionFactory(tunnel=TunnelFactory(project=project))
    travel(60)
    state = tunnels.tunnel_state(project=project)
    assert (state.status, state.clients, state.connected_since) == ("waiting", 0, None)
    assert edge().status_code == 503
    travel(600)
    assert tunnels_prune() == {"connections": 1, "requests": 0}


def test_the_projects_firewall_applies_to_its_tunnel(project):
    from tests.platform_app.edge.factories import FirewallRuleFactory

    FirewallRuleFactory(project=project)  # deny /admin
    TunnelFactory(project=project)
    assert edge("/admin/users").status_code == 403
    assert edge("/file.txt").status_code == 503  # past the firewall, to the (unconnected) tunnel


def test_request_bodies_over_the_limit_are_413(project, settings):
    settings.TUNNEL_MAX_BODY_BYTES = 10
    TunnelConnectionFactory(tunnel=TunnelFactory(project=project))
    resp = Client().post("/upload", data=b"x" * 11, content_type="application/octet-stream",
                         HTTP_HOST="shop-tunnel.localhost")
    assert resp.status_code == 413 and not TunnelRequest.objects.exists()


def test_caddy_may_get_a_certificate_for_a_projects_tunnel_host(project, settings):
    settings.CADDY_ASK_PLATFORM_NAMES = True
    assert tls_allowed("shop-tunnel.localhost") and not tls_allowed("nobody-tunnel.localhost")


def test_heartbeat_counts_bytes_and_notices_a_stop(project):
    tunnel = TunnelFactory(project=project)
    connection = TunnelConnectionFactory(tunnel=tunnel)
    assert tunnels.tunnel_connection_beat(connection=connection, bytes_in=5, bytes_out=7)
    TunnelConnection.objects.all().delete()  # pruned during a database outage, still current: it comes back
    assert tunnels.tunnel_connection_beat(connection=connection, bytes_in=1, bytes_out=1)
    assert TunnelConnection.objects.filter(pk=connection.pk).exists()
    assert tunnels.tunnel_connection_beat(connection=connection, bytes_in=3 * 2 ** 30, bytes_out=5 * 2 ** 30)
    tunnels.tunnel_stop(project=project)
    assert not tunnels.tunnel_connection_beat(connection=connection, bytes_in=100, bytes_out=100)
    tunnel.refresh_from_db()
    assert (tunnel.bytes_in, tunnel.bytes_out) == (6 + 3 * 2 ** 30, 8 + 5 * 2 ** 30)  # past 32 bits: not wrapped


# The dashboard -------------------------------------------------------------------------------------------------

def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_tunnel_page_starts_with_the_command_once_and_stops(alice, project):
    client = browser(alice)
    page = f"/dashboard/acme/projects/{project.slug}/tunnel/"
    html = client.get(page).content.decode()
    assert 'aria-current="page">Tunnel<' in html and "stopped" in html and "Start tunnel" in html
    assert "http://shop-tunnel.localhost:8000/" in html
    resp = client.post(page, {"port": "8080"})
    assert resp.status_code == 200
    html = resp.content.decode()
    token = html.split("Token: <code>")[1].split("</code>")[0]
    assert sha256_hex(token) == Tunnel.objects.get().token_hash
    assert f"--project {project.pk} --port 8080 --token {token}" in html and "waiting" in html
    later = client.get(page).content.decode()
    assert token not in later and "Stop tunnel" in later and "New token" in later
    assert client.post(page, {"port": "0"}).status_code == 400
    stopped = client.post(f"/dashboard/acme/projects/{project.pk}/tunnel/stop", follow=True)
    assert stopped.status_code == 200 and "Tunnel stopped" in stopped.content.decode()
    assert Tunnel.objects.get().token_hash == ""


def test_tunnel_page_for_developers_and_outsiders(bob, charlie, project):
    TunnelFactory(project=project)
    page = f"/dashboard/acme/projects/{project.slug}/tunnel/"
    html = browser(bob).get(page).content.decode()
    assert "waiting" in html and "Stop tunnel" not in html and "New token" not in html and 'name="port"' not in html
    assert browser(bob).post(page, {"port": "3000"}).status_code == 403
    assert browser(bob).post(f"/dashboard/acme/projects/{project.pk}/tunnel/stop").status_code == 403
    assert Tunnel.objects.get().token_hash
    assert browser(charlie).get(page).status_code == 404
