"""A Host with the DNS root's trailing dot (`site.localhost.`) names the same host as without it: the edge routes
it alike and Django's host check sees the same name, so it never falls through to the platform."""
import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/dashboard/", "/v1/auth/me", "/api/warehouses"])
def test_an_unknown_deployment_host_with_a_trailing_dot_is_404_like_without(client, path):
    plain = client.get(path, HTTP_HOST="anything.localhost")
    assert plain.status_code == 404
    for host in ("anything.localhost.", "anything.localhost..", "anything.localhost.:8000"):
        dotted = client.get(path, HTTP_HOST=host)
        assert (dotted.status_code, dotted.content) == (plain.status_code, plain.content), host


def test_a_deployment_host_with_a_trailing_dot_serves_the_deployment(site, client):
    for host in ("site.localhost.", "site.localhost.:8000", "SITE.LOCALHOST."):
        resp = client.get("/", HTTP_HOST=host)
        assert resp.status_code == 200 and b"<h1>Home</h1>" in resp.content, host


def test_the_platform_host_with_a_trailing_dot_is_still_the_platform(client):
    dotted, plain = (client.get("/dashboard/", HTTP_HOST=host) for host in ("localhost.", "localhost:8000"))
    assert dotted.status_code == plain.status_code == 302
