"""Unknown routes, wrong methods, CSRF failures and malformed query parameters are a 4xx in the service's error
shape, never a 500 (docs/architecture.md, "Input limits"), with DEBUG on too."""
import base64

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import path
from django.views.decorators.http import require_POST

from config import urls
from tests.otp_app.conftest import key_client, sandbox  # noqa: F401
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body
from tests.test_bad_input import no_errors_logged, otp_error, platform_error, warehouse_error  # noqa: F401

pytestmark = pytest.mark.django_db


# Unknown routes, wrong methods -----------------------------------------------------------------------------

@pytest.mark.parametrize("debug", [True, False])
def test_unknown_api_routes_are_json_404_also_in_debug(api, settings, debug):
    settings.DEBUG = debug
    platform_error(api.get("/v1/no-such-route"), 404, "not_found")
    platform_error(api.get("/health/deep"), 404, "not_found")
    otp_error(api.post("/api/v1/no-such-route", {}, format="json"), 404, "not_found")
    warehouse_error(api.get("/api/no-such-route"), 404, "not_found")
    page = api.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_wrong_method_is_json_405_also_in_debug(api, sandbox, settings):
    settings.DEBUG = True
    resp = api.delete("/health")
    platform_error(resp, 405, "method_not_allowed")
    client, _ = sandbox
    otp_error(client.put("/api/v1/otp/send", {}, format="json"), 405, "method_not_allowed")
    warehouse_error(api.delete("/api/warehouses"), 405, "method_not_allowed")


@require_POST
def plain_view(request):
    """A plain Django view (no DRF) under an API prefix: its 405 and CSRF failures come from Django."""
    return HttpResponse("ok")


urlpatterns = [path("api/v1/plain", plain_view), path("v1/plain", plain_view), *urls.urlpatterns]
handler400, handler404, handler500 = urls.handler400, urls.handler404, urls.handler500


@pytest.mark.urls("tests.test_bad_routes_and_queries")
def test_plain_views_under_api_prefixes_answer_in_the_service_shape(settings):
    settings.DEBUG = True
    resp = Client().get("/api/v1/plain")
    otp_error(resp, 405, "method_not_allowed")
    assert resp["Allow"] == "POST"
    resp = Client(enforce_csrf_checks=True).post("/v1/plain", {"a": "b"})
    assert "CSRF" in platform_error(resp, 403, "csrf_failed")["message"]
    page = Client(enforce_csrf_checks=True).post("/dashboard/login/", {"email": "a@example.com"})
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


def test_a_disallowed_host_on_an_api_route_is_json_400(api):
    platform_error(api.get("/v1/auth/me", HTTP_HOST="evil.example"), 400, "bad_request")


# Query parameters --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["limit=abc", "limit=-1", "limit=0", "limit=1.5", "limit=%C2%B2",
                                   "cursor=garbage", "cursor=MjAyNC0wMS0wMVQwMDowMDowMHwA",
                                   "cursor=MDAwMS0wMS0wMVQwMDowMDowMCsyMzo1OXx4"])
def test_bad_platform_list_parameters_are_400_naming_them(alice_client, query, no_errors_logged):
    body = platform_error(alice_client.get(f"/v1/orgs/acme/members?{query}"), 400, "validation_error")
    assert query.split("=")[0] in body["details"]


def test_huge_limits_are_clamped_and_naive_cursors_read_as_utc(alice_client):
    resp = alice_client.get("/v1/orgs/acme/members?limit=99999999999999999999")
    assert resp.status_code == 200 and len(resp.json()["items"]) == 1
    cursor = base64.urlsafe_b64encode(b"2999-01-01T00:00:00|zzz").decode()
    assert alice_client.get(f"/v1/orgs/acme/members?cursor={cursor}").json()["items"]


@pytest.mark.parametrize("query", ["page=abc", "page=-1", "page=0", "page_size=x", "page=%C2%B2"])
def test_bad_warehouse_paging_is_400(api, query, no_errors_logged):
    warehouse_error(api.get(f"/api/warehouses?{query}"), 400, "validation_error")


def test_huge_warehouse_pages_are_clamped_or_past_the_end(api):
    resp = api.get("/api/warehouses?page_size=99999999999999999999")
    assert resp.status_code == 200 and resp.json()["page_size"] == 100
    warehouse_error(api.get("/api/warehouses?page=99999999999999999999"), 400, "validation_error")
    warehouse_error(api.get("/api/warehouses?page=1000000000"), 404, "not_found")


def test_bad_search_filters_are_named_not_failed(api):
    resp = api.get("/api/warehouses/search", {"min_area": "-1", "max_area": "nan", "city": "x" * 5000,
                                              "page_size": "99999999999999999999"})
    assert resp.status_code == 200 and resp.json()["page_size"] == 100
    assert {f["name"] for f in resp.json()["unapplied_filters"]} >= {"min_area", "max_area"}


def test_stream_resume_position_with_odd_digits_is_ignored(alice_client, alice):
    project = ProjectFactory(workspace=alice.memberships.get().workspace, name="Web", slug="web",
                             git_url="file:///nowhere")
    deployment = DeploymentFactory(project=project, branch="main", status="error")
    resp = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/logs/stream", HTTP_LAST_EVENT_ID="\u00b2")
    assert resp.status_code == 200
    assert b"event: end" in sse_body(resp)
