"""Directory answers kept whole for requests without credentials (config/kept_answers.py), through the ASGI
application as the production server runs it: sent again without entering Django while the directory holds, the
same bytes and headers, and made again once it changes, the host changes hands or a request carries credentials."""
import asyncio

import httpx
import pytest
from django.core.signals import request_started

from platform_app.services.edge.hostcache import edge_hosts_invalidate
from warehouse_app.models import DirectoryFacet
from warehouse_app.services import directory

SEARCH = "/api/warehouses/search?type=industrial"


@pytest.fixture
def server(imported, transactional_db, settings, asgi_application):
    """Requests to config.asgi.application, and how many of them Django handled. The version checks are set far
    apart so the test's own pace cannot make one come due."""
    settings.WAREHOUSE_LOCAL_CHECK_SECONDS = settings.EDGE_LOCAL_CHECK_SECONDS = 60
    handled = []

    def count(**_):
        handled.append(1)

    request_started.connect(count)

    class Server:
        def get(self, path, **headers) -> httpx.Response:
            async def call():
                transport = httpx.ASGITransport(app=asgi_application)
                async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
                    return await client.get(path, headers=headers)

            return asyncio.run(call())

        @property
        def handled(self) -> int:
            return len(handled)

    yield Server()
    request_started.disconnect(count)


def test_a_directory_list_is_sent_again_without_django_until_the_facets_change(server):
    first = server.get("/api/regions")
    assert server.handled == 1
    DirectoryFacet.objects.filter(kind="region").update(facility_count=7)  # not through the refresh: unseen
    again = server.get("/api/regions")
    assert first.status_code == again.status_code == 200
    assert server.handled == 1  # answered from what the process kept
    assert again.content == first.content and first.json()["results"][0]["facility_count"] != 7
    assert dict(again.headers) == dict(first.headers)  # Content-Security-Policy, Vary... as Django sent them

    directory.facets_refresh()  # the directory changes: every process drops what it kept
    DirectoryFacet.objects.filter(kind="region").update(facility_count=7)
    after = server.get("/api/regions")
    assert server.handled == 2 and after.json()["results"][0]["facility_count"] == 7


def test_an_anonymous_search_asked_twice_is_kept_and_each_search_apart(server):
    first = server.get(SEARCH)
    second = server.get(SEARCH + "&page_size=5")
    assert first.status_code == second.status_code == 200 and server.handled == 2
    assert len(first.json()["results"]) == 20 and len(second.json()["results"]) == 5
    # asked a second time: answered by Django from the kept page, and kept whole from then on
    for _ in range(3):
        assert server.get(SEARCH).content == first.content
        assert server.get(SEARCH + "&page_size=5").content == second.content
    assert server.handled == 4


@pytest.mark.parametrize("headers", [{"Cookie": "csrftoken=abc"}, {"Authorization": "Bearer x"},
                                     {"If-None-Match": '"x"'}, {"HX-Request": "true"}])
def test_a_request_with_other_headers_goes_to_django(server, headers):
    server.get(SEARCH)
    server.get(SEARCH)  # now kept
    assert server.get(SEARCH, **headers).status_code == 200
    assert server.get(SEARCH, **headers).status_code == 200
    assert server.handled == 4


def test_what_an_answer_varies_on_is_kept_apart(server):
    server.get("/api/regions")
    server.get("/api/regions", **{"X-Forwarded-Proto": "https"})
    server.get("/api/regions", Accept="application/json")
    server.get("/api/regions", Host="127.0.0.1")
    assert server.handled == 4
    for headers in ({}, {"X-Forwarded-Proto": "https"}, {"Accept": "application/json"}, {"Host": "127.0.0.1"}):
        server.get("/api/regions", **headers)
    assert server.handled == 4


def test_errors_are_not_kept(server):
    for _ in range(2):
        assert server.get(SEARCH + "&page=1000").status_code == 404
        assert server.get("/api/facilities/no-such-slug").status_code == 404
    assert server.handled == 4


def test_a_change_of_what_hosts_serve_drops_kept_answers(server):
    server.get("/api/regions")
    edge_hosts_invalidate()  # a domain added, a deployment promoted: the host may be a deployment's now
    server.get("/api/regions")
    server.get("/api/regions")
    assert server.handled == 2


def test_a_due_version_check_sends_the_request_to_django(server, settings):
    server.get("/api/regions")
    settings.WAREHOUSE_LOCAL_CHECK_SECONDS = 0  # the facets' shared version must be read again on every request
    directory.facet_lists.reset()
    server.get("/api/regions")
    server.get("/api/regions")
    assert server.handled == 3
