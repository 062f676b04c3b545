"""The path the edge serves is the path its rules see: every spelling of a protected file (repeated slashes, `.`
and `..` segments, encoded dots and slashes, the clean URL, a trailing slash) meets the firewall, shares one cache
entry, and reaches a running instance normalised. Raw paths are given as a WSGI server hands them to Django
(PATH_INFO percent-decoded once, nothing else changed), and once over a real socket."""
import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote_to_bytes

import pytest

from platform_app.models import Deployment, FirewallEvent
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.edge.test_firewall import add, cond

pytestmark = pytest.mark.django_db


def raw_get(client, raw: str, host: str = "site.localhost", **extra):
    """GET `raw` exactly as sent on the wire: the server decodes %XX once into PATH_INFO (latin-1), and the test
    client's own URL parsing (which would read `//admin` as a host) is bypassed."""
    path, _, query = raw.partition("?")
    return client.get("/", PATH_INFO=unquote_to_bytes(path).decode("iso-8859-1"), QUERY_STRING=query,
                      HTTP_HOST=host, REMOTE_ADDR="203.0.113.7", **extra)


@pytest.fixture
def protected(site, settings, alice_client):
    """The site with /admin/secret.html and /private.html, denied by `prefix /admin` and `eq /private.html`."""
    artifact = settings.ARTIFACT_ROOT / "site-1"
    (artifact / "admin" / "secret.html").write_text("<p>secret</p>")
    (artifact / "private.html").write_text("<p>private</p>")
    add(alice_client, site, "deny", cond("path", "prefix", "/admin"))
    add(alice_client, site, "deny", cond("path", "eq", "/private.html"))
    return site


SPELLINGS = ["/admin/secret.html", "//admin/secret.html", "/./admin/secret.html", "/%2e/admin/secret.html",
             "/%2fadmin/secret.html", "/x/../admin/secret.html", "/x/%2e%2e/admin/secret.html",
             "/../admin/secret.html", "/admin//secret.html", "/ADMIN/../admin/secret.html",
             "/private.html", "//private.html", "/private", "/private.html/", "/private.html/.", "/./private",
             "/x/../private.html", "/%2fprivate.html"]


@pytest.mark.parametrize("raw", SPELLINGS)
def test_every_spelling_of_a_denied_path_is_refused(protected, client, raw):
    resp = raw_get(client, raw)
    assert resp.status_code == 403, (raw, resp.status_code, resp.content[:60])
    assert b"secret" not in resp.content and b"private" not in resp.content
    event = FirewallEvent.objects.get()
    assert event.path in ("/admin/secret.html", "/admin/", "/private.html", "/private.html/", "/private")


def test_what_the_rules_do_not_name_is_still_served(protected, client):
    assert raw_get(client, "//about").content == b"<html><body><p>About</p></body></html>"
    assert raw_get(client, "/x/../index.html").status_code == 200
    assert raw_get(client, "/private.htm").status_code == 404  # another name, no such file
    assert not FirewallEvent.objects.exists()


def test_the_real_server_sees_the_same_paths(transactional_db, live_server, site, settings, alice_client):
    """Over a socket, path as-is (what `curl --path-as-is` sends): the server's own decoding then the edge's."""
    (settings.ARTIFACT_ROOT / "site-1" / "admin" / "secret.html").write_text("<p>secret</p>")
    add(alice_client, site, "deny", cond("path", "prefix", "/admin"))
    host, port = live_server.thread.host, live_server.thread.port
    for raw in ("//admin/secret.html", "/%2e/admin/secret.html", "/%2fadmin/secret.html", "/x/../admin/secret.html",
                "/%2E%2E/admin/secret.html", "/admin/secret.html"):
        connection = http.client.HTTPConnection(host, port, timeout=10)
        connection.putrequest("GET", raw, skip_host=True)
        connection.putheader("Host", "site.localhost")
        connection.endheaders()
        resp = connection.getresponse()
        body = resp.read()
        connection.close()
        assert resp.status == 403 and b"secret" not in body, (raw, resp.status, body[:60])


def test_one_cache_entry_per_served_file(site, client):
    first = raw_get(client, "/app.js")
    assert first.status_code == 200 and first["X-Edge-Cache"] == "MISS"
    for raw in ("//app.js", "///app.js", "/./app.js", "/x/../app.js", "/%2fapp.js"):
        again = raw_get(client, raw)
        assert (again.status_code, again["X-Edge-Cache"], again.content) == (200, "HIT", b"console.log(1)"), raw
    assert raw_get(client, "/about")["X-Edge-Cache"] == "MISS"
    assert raw_get(client, "/about.html")["X-Edge-Cache"] == "HIT"  # the clean URL's file
    assert raw_get(client, "/about/")["X-Edge-Cache"] == "HIT"


def test_isr_revalidation_purges_the_served_file(alice_client, site, client, settings):
    raw_get(client, "/")
    (settings.ARTIFACT_ROOT / "site-1" / "index.html").write_text("<h1>v2</h1>")
    assert raw_get(client, "//index.html").content != b"<h1>v2</h1>"  # the same entry as /
    resp = alice_client.post(f"/v1/orgs/acme/projects/{site.pk}/isr/revalidate", {"paths": ["/"]}, format="json")
    assert resp.status_code == 201 and resp.json()["purged"] == ["/index.html"]
    assert raw_get(client, "/").content == b"<h1>v2</h1>"


@pytest.mark.parametrize("raw", ["/" + "a" * 256, "/" + "a" * 300 + "/index.html", "/admin/" + "é" * 200,
                                 "/" + "/".join(["b" * 250] * 20)])
def test_an_overlong_path_is_404(site, client, raw):
    resp = raw_get(client, raw)
    assert resp.status_code == 404 and resp.content == b"Not found"


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.requestline.split(" ")[1].encode()  # as sent (http.server collapses a leading // in .path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def instance(site):
    """A runtime deployment of the site whose running instance answers with the path it was asked for."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    deployment = DeploymentFactory(project=site, env="production", status=Deployment.Status.READY,
                                   artifact_path="site-1", snapshot={"start": "python app.py"})
    site.production_deployment = deployment
    site.save(update_fields=["production_deployment"])
    InstanceFactory(deployment=deployment, node=AgentNodeFactory(workspace=site.workspace, host="127.0.0.1"),
                    status="running", port=server.server_address[1])
    yield deployment
    server.shutdown()


def test_a_running_instance_gets_the_normalised_path(instance, site, client, alice_client):
    assert raw_get(client, "//a//b/./c/../d%20e?x=1&y=%2F").content == b"/a/b/d%20e?x=1&y=%2F"
    assert raw_get(client, "/a/%2fb").content == b"/a/b"
    assert raw_get(client, "/docs/").content == b"/docs/"  # a trailing slash is the app's to interpret
    add(alice_client, site, "deny", cond("path", "prefix", "/admin"))
    assert raw_get(client, "//admin").status_code == 403
    assert raw_get(client, "/x/../admin/").status_code == 403
    assert raw_get(client, "/%2fadmin").status_code == 403
