"""The edge and custom domains: a verified domain is served like `<project>.DEPLOY_DOMAIN`, an unverified one
is not, a non-primary one answers 308 to the primary (path and query kept), a branch domain serves that
branch; Caddy's on-demand TLS `ask` allows verified domains only."""
import pytest

from platform_app.models import Domain
from tests.platform_app.domains.factories import ready_deployment

pytestmark = pytest.mark.django_db


@pytest.fixture
def verified(alice_client, url, zone):
    """`verified("www.example.com")`: added and verified through the API (an A record to the platform)."""

    def make(name: str, **body) -> Domain:
        created = alice_client.post(url, {"name": name, **body}, format="json")
        assert created.status_code == 201, created.json()
        zone.set(name, "A", "203.0.113.10")
        resp = alice_client.post(f"{url}/{created.json()['id']}/verify", {}, format="json")
        assert resp.json()["status"] == "verified"
        return Domain.objects.get(name=name)

    return make


def test_a_verified_domain_is_served_and_an_unverified_one_is_not(alice_client, client, url, project, zone):
    created = alice_client.post(url, {"name": "www.example.com"}, format="json").json()
    before = client.get("/about", HTTP_HOST="www.example.com")
    assert b"about" not in before.content and before.status_code == 400  # not ours yet: Django refuses the host
    zone.set("_svc-challenge.www.example.com", "TXT", Domain.objects.get().verification_token)
    alice_client.post(f"{url}/{created['id']}/verify", {}, format="json")
    resp = client.get("/about", HTTP_HOST="www.example.com")  # the edge's host cache learnt of it
    assert resp.status_code == 200 and resp.content == b"<p>about</p>"
    assert resp["X-Deployment-Id"] == project.production_deployment_id
    assert client.get("/", HTTP_HOST="WWW.example.com:8443").content == b"<h1>shop</h1>"
    assert client.get("/", HTTP_HOST="www.example.com.").content == b"<h1>shop</h1>"
    # removed: no longer served
    alice_client.delete(f"{url}/{created['id']}")
    assert client.get("/about", HTTP_HOST="www.example.com").status_code == 400


def test_a_lost_record_stops_serving(alice_client, client, url, verified, zone):
    domain = verified("www.example.com")
    assert client.get("/", HTTP_HOST="www.example.com").status_code == 200
    zone.remove("www.example.com", "A")
    zone.set("www.example.com", "AAAA", "2001:db8::99")
    assert alice_client.post(f"{url}/{domain.pk}/verify", {}, format="json").json()["status"] == "misconfigured"
    assert client.get("/", HTTP_HOST="www.example.com").status_code == 400


def test_other_domains_redirect_to_the_primary(alice_client, client, url, verified):
    verified("www.example.com")
    apex = verified("example.com")
    assert client.get("/", HTTP_HOST="example.com").status_code == 200  # no primary yet: both serve
    alice_client.post(f"{url}/{Domain.objects.get(name='www.example.com').pk}/primary", {}, format="json")
    resp = client.get("/about?ref=mail&x=1", HTTP_HOST="example.com")
    assert resp.status_code == 308
    assert resp["Location"] == "http://www.example.com/about?ref=mail&x=1"
    assert client.get("/about", HTTP_HOST="example.com:8000")["Location"] == "http://www.example.com:8000/about"
    assert client.get("/about", HTTP_HOST="www.example.com").status_code == 200
    # the platform's own address of the project keeps serving
    assert client.get("/about", HTTP_HOST="shop.localhost").status_code == 200
    apex.refresh_from_db()
    assert not apex.primary


@pytest.mark.parametrize("host", ["example.com:@evil.example", "example.com:8000@evil.example",
                                  "example.com:8000:@evil.example", "example.com:x", "example.com:/evil.example",
                                  "www.example.com:@evil.example"])
def test_anything_but_a_port_after_the_name_is_refused(alice_client, client, url, verified, host):
    """The 308 to the primary keeps the request's port: nothing else from the Host header may reach Location."""
    verified("www.example.com")
    verified("example.com")
    alice_client.post(f"{url}/{Domain.objects.get(name='www.example.com').pk}/primary", {}, format="json")
    assert client.get("/about", HTTP_HOST="example.com:8000")["Location"] == "http://www.example.com:8000/about"
    resp = client.get("/about", HTTP_HOST=host)
    assert resp.status_code == 400 and "Location" not in resp
    assert b"about" not in resp.content


def test_redirect_to_and_branch_domains(alice_client, client, url, project, verified):
    verified("example.com")
    verified("old.example.com", redirectTo="example.com")
    resp = client.get("/x?y=1", HTTP_HOST="old.example.com")
    assert resp.status_code == 308 and resp["Location"] == "http://example.com/x?y=1"
    ready_deployment(project, {"index.html": "<h1>old staging</h1>"}, branch="staging", production=False)
    newest = ready_deployment(project, {"index.html": "<h1>staging</h1>"}, branch="staging", production=False)
    staging = verified("staging.example.com", gitBranch="staging")
    primary = alice_client.post(f"{url}/{Domain.objects.get(name='example.com').pk}/primary", {}, format="json")
    assert primary.status_code == 201
    resp = client.get("/", HTTP_HOST="staging.example.com")  # a branch domain never redirects to the primary
    assert resp.status_code == 200 and resp.content == b"<h1>staging</h1>" and resp["X-Deployment-Id"] == newest.pk
    alice_client.patch(f"{url}/{staging.pk}", {"gitBranch": "nothing-deployed"}, format="json")
    assert client.get("/", HTTP_HOST="staging.example.com").status_code == 404


def test_the_platform_itself_is_unaffected(alice_client, verified):
    verified("www.example.com")
    assert alice_client.get("/v1/orgs/acme/domains").status_code == 200  # testserver: the platform


def test_caddy_asks_before_issuing_a_certificate(client, alice_client, url, verified):
    verified("www.example.com")
    alice_client.post(url, {"name": "pending.example.com"}, format="json")
    assert client.get("/internal/caddy/ask", {"domain": "www.example.com"}).status_code == 200
    assert client.get("/internal/caddy/ask", {"domain": "WWW.example.com."}).status_code == 200
    for name in ("pending.example.com", "unknown.example.com", "", "x" * 300):
        assert client.get("/internal/caddy/ask", {"domain": name}).status_code == 404
    assert client.get("/internal/caddy/ask").status_code == 404
    assert client.post("/internal/caddy/ask?domain=www.example.com").status_code == 405


def test_caddy_may_also_certify_the_platforms_own_names(client, project, settings):
    settings.DOMAINS_RESERVED = ["localhost", "platform.example.net"]
    deployment = project.production_deployment
    allowed = ["platform.example.net", "shop.localhost", f"shop-{deployment.pk[4:12]}.localhost"]
    refused = ["nothing.localhost", "a.shop.localhost", "shop-zzzz.localhost", "other.example.net"]
    for name in allowed:
        assert client.get("/internal/caddy/ask", {"domain": name}).status_code == 200, name
    for name in refused:
        assert client.get("/internal/caddy/ask", {"domain": name}).status_code == 404, name
    settings.CADDY_ASK_PLATFORM_NAMES = False  # a wildcard certificate elsewhere covers them
    assert client.get("/internal/caddy/ask", {"domain": "shop.localhost"}).status_code == 404


def test_custom_domains_reach_the_edge_under_production_host_settings(client, verified, settings):
    """Production lists only the platform's names in ALLOWED_HOSTS (with_edge_hosts) and redirects plain http:
    the edge runs before Django validates the host, so a verified domain behind the TLS proxy is served, and a
    name nobody verified is refused as before."""
    from config.settings.deployments import with_edge_hosts

    verified("www.example.com")
    settings.ALLOWED_HOSTS = with_edge_hosts(["platform.example.net"])
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    resp = client.get("/about", HTTP_HOST="www.example.com", HTTP_X_FORWARDED_PROTO="https")
    assert resp.status_code == 200 and resp.content == b"<p>about</p>"
    assert client.get("/about", HTTP_HOST="other.example.com", HTTP_X_FORWARDED_PROTO="https").status_code == 400
    assert client.get("/health", HTTP_HOST="platform.example.net", HTTP_X_FORWARDED_PROTO="https").status_code == 200


def test_the_lookup_is_one_query_and_the_platforms_own_names_cost_none(verified, django_assert_num_queries):
    from platform_app.services.domains.routing import DomainRedirect, domain_resolve

    verified("www.example.com")
    verified("example.com", redirectTo="www.example.com")
    with django_assert_num_queries(1):
        assert domain_resolve("www.example.com").project.slug == "shop"
    with django_assert_num_queries(1):
        assert isinstance(domain_resolve("example.com"), DomainRedirect)
    with django_assert_num_queries(1):
        assert domain_resolve("unknown.example.com") is None
    with django_assert_num_queries(0):
        for host in ("testserver", "localhost", "127.0.0.1", "[::1]", "shop.localhost"):
            assert domain_resolve(host) is None
