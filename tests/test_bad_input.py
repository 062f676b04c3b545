"""Bad bytes and shapes from clients are a 4xx in the service's error shape, never a 500 (docs/architecture.md,
"Input limits"): NUL in paths, queries, headers, JSON and forms; deep JSON; over-size bodies.
Unknown routes and query parameters: test_bad_routes_and_queries.py."""
import json
import logging

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client
from django.test.client import FakePayload
from rest_framework.test import APIClient

from otp_app.models import ApiKey, OtpRecord
from platform_app.models import AuthSession, Deployment, Project, User, Workspace
from tests.factories import PASSWORD
from tests.otp_app.conftest import PHONE, key_client, sandbox  # noqa: F401
from tests.platform_app.deployments.factories import DeployHookFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.warehouse_app.conftest import customer, customer_client  # noqa: F401
from warehouse_app.models import UsageCounter

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024


def platform_error(resp, status, code):
    body = resp.json()
    assert resp.status_code == status, body
    assert body["code"] == code and body["status"] == status and "message" in body and "details" in body
    return body


def otp_error(resp, status, code):
    body = resp.json()
    assert resp.status_code == status, body
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]
    return body


def warehouse_error(resp, status, code):
    body = resp.json()
    assert resp.status_code == status, body
    assert isinstance(body["error"], str) and body["code"] == code
    return body


@pytest.fixture
def no_errors_logged(caplog):
    """Client mistakes are warnings at most: nothing at ERROR (no traceback) in any logger."""
    caplog.set_level(logging.WARNING)
    yield
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


# NUL in paths and queries -------------------------------------------------------------------------------------

def test_nul_in_platform_path_and_query_writes_nothing(alice_client, workspace, no_errors_logged):
    platform_error(alice_client.get("/v1/orgs/demo%00/projects"), 400, "validation_error")
    resp = alice_client.post("/v1/orgs/acme%00/projects", {"name": "web"}, format="json")
    assert platform_error(resp, 400, "validation_error")["details"] == {"path": ["Contains a NUL character."]}
    resp = alice_client.post("/v1/orgs?next=%00", {"name": "Second"}, format="json")
    assert platform_error(resp, 400, "validation_error")["details"] == {"next": ["Contains a NUL character."]}
    assert not Project.objects.exists() and Workspace.objects.count() == 1


def test_nul_in_otp_path_and_query_writes_nothing(sandbox, no_errors_logged):
    client, _ = sandbox
    otp_error(client.get("/api/v1/otp/otp_%00"), 400, "validation_error")
    otp_error(APIClient().get("/api/v1/otp/otp_%00"), 400, "validation_error")
    resp = client.post("/api/v1/otp/send?channel=%00sms", {"recipient": PHONE}, format="json")
    otp_error(resp, 400, "validation_error")
    assert not OtpRecord.objects.exists()


def test_nul_in_warehouse_query_is_400_and_counts_no_search(customer_client, no_errors_logged):
    warehouse_error(APIClient().get("/api/warehouses/search?city=%00"), 400, "validation_error")
    body = warehouse_error(customer_client.get("/api/warehouses/search?city=Balt%00imore"), 400, "validation_error")
    assert "city" in body["error"]
    assert not UsageCounter.objects.exists()  # a search that ran would have been counted
    assert customer_client.get("/api/warehouses/search?city=Baltimore").status_code == 200
    assert UsageCounter.objects.get().used == 1


def test_nul_in_a_page_path_is_an_html_400():
    resp = Client().get("/warehouses/city/a%00b/")
    assert resp.status_code == 400 and resp["Content-Type"].startswith("text/html")


# NUL and invalid Unicode in bodies, headers, forms ----------------------------------------------------------

def test_nul_in_json_values_and_keys_is_400_naming_the_field(alice_client, sandbox, no_errors_logged):
    resp = alice_client.post("/v1/orgs", {"name": "a\u0000b"}, format="json")
    details = platform_error(resp, 400, "validation_error")["details"]
    assert details == {"name": ["Contains a NUL character or invalid Unicode."]}
    resp = alice_client.post("/v1/orgs", b'{"name": "ok", "tags": [{"x\\u0000": 1}]}',
                             content_type="application/json")
    platform_error(resp, 400, "validation_error")
    lone_surrogate = b'{"name": "a\\ud800b"}'  # valid JSON, not storable as UTF-8
    resp = alice_client.post("/v1/orgs", lone_surrogate, content_type="application/json")
    platform_error(resp, 400, "validation_error")
    assert Workspace.objects.count() == 1
    client, _ = sandbox
    otp_error(client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "e\u0000n"}, format="json"),
              400, "validation_error")
    assert not OtpRecord.objects.exists()


def test_nul_in_warehouse_signup_writes_no_account(api, no_errors_logged):
    resp = api.post("/api/auth/signup", {"email": "dana@example.com", "password": "Pallets-and-more-42",
                                         "name": "Da\u0000na"}, format="json")
    assert "name" in warehouse_error(resp, 400, "validation_error")["error"]
    assert not User.objects.filter(email="dana@example.com").exists()


def test_nul_in_lookup_headers_is_400(sandbox, alice, no_errors_logged):
    client, _ = sandbox
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY="a\x00b")
    assert "Idempotency-Key" in otp_error(resp, 400, "validation_error")["error"]["message"]
    assert not OtpRecord.objects.exists()
    resp = APIClient().get("/v1/auth/me", HTTP_AUTHORIZATION="Bearer svc_\x00abc")
    platform_error(resp, 400, "validation_error")
    resp = APIClient().get("/v1/auth/me", HTTP_COOKIE='sessionid="abc\\000def"')  # an octal escape in a quoted cookie
    platform_error(resp, 400, "validation_error")


def test_an_over_long_idempotency_key_is_400_and_triggers_nothing(alice, alice_client, no_errors_logged):
    project = ProjectFactory(workspace=alice.memberships.get().workspace, name="Web", slug="web",
                             git_url="file:///nowhere")
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/deployments", {"env": "production"},
                             format="json", HTTP_IDEMPOTENCY_KEY="k" * 300)
    assert "Idempotency-Key" in platform_error(resp, 400, "validation_error")["details"]
    assert not Deployment.objects.exists()


def test_nul_in_page_forms_is_400_and_writes_nothing(alice, workspace):
    client = Client()
    resp = client.post("/dashboard/login/", {"email": alice.email, "password": PASSWORD + "\x00"})
    assert resp.status_code == 400 and resp["Content-Type"].startswith("text/html")
    assert not AuthSession.objects.exists() and "_auth_user_id" not in client.session
    assert client.post("/dashboard/login/", {"email": alice.email, "password": PASSWORD}).status_code == 302
    resp = client.post("/dashboard/otp/acme/", {"name": "ci\x00", "mode": "test"})
    assert resp.status_code == 400 and not ApiKey.objects.exists()


def test_form_post_to_an_api_route_with_nul_is_400_in_the_service_shape(alice, no_errors_logged):
    project = ProjectFactory(workspace=alice.memberships.get().workspace, name="Web", slug="web",
                             git_url="file:///nowhere")
    resp = APIClient().post(f"/v1/preview-protection/{project.pk}/verify", "password=a%00b",
                            content_type="application/x-www-form-urlencoded")
    assert platform_error(resp, 400, "validation_error")["details"] == {"password": ["Contains a NUL character."]}


# Deep JSON ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v1/auth/sign-in", "/api/auth/login", "/api/auth/signup"])
def test_deep_json_on_unauthenticated_routes_is_400_without_a_traceback(api, path, no_errors_logged):
    resp = api.post(path, deep(500), content_type="application/json")
    assert resp.status_code == 400
    body = resp.json()
    assert (body["code"] == "malformed_json") and "deeper than 32" in json.dumps(body)


def test_deep_json_on_otp_send(sandbox, no_errors_logged):
    otp_error(APIClient().post("/api/v1/otp/send", deep(500), content_type="application/json"), 401, "unauthenticated")
    client, _ = sandbox
    otp_error(client.post("/api/v1/otp/send", deep(500), content_type="application/json"), 400, "malformed_json")
    otp_error(client.post("/api/v1/otp/verify", deep(100_000), content_type="application/json"), 400, "malformed_json")
    assert not OtpRecord.objects.exists()


def test_deep_json_on_authenticated_routes(alice_client, customer_client, no_errors_logged):
    nested = b'{"name": "x", "a": ' + b'{"b": ' * 40 + b"1" + b"}" * 40 + b"}"
    platform_error(alice_client.post("/v1/orgs", nested, content_type="application/json"), 400, "malformed_json")
    warehouse_error(customer_client.post("/api/quotes/rfq", deep(33), content_type="application/json"),
                    400, "malformed_json")
    # 32 levels is JSON the parser reads; the serializer then says what is wrong with it
    warehouse_error(customer_client.post("/api/quotes/rfq", deep(32), content_type="application/json"),
                    400, "validation_error")
    # brackets inside strings are text, not depth
    resp = alice_client.post("/v1/orgs", json.dumps({"name": "[" * 200}), content_type="application/json")
    platform_error(resp, 400, "validation_error")  # too long a name, but read fine
    assert Workspace.objects.count() == 1


def test_numbers_json_cannot_mean_are_malformed(alice_client):
    for text in (b'{"name": NaN}', b'{"name": 1e999}', b'{"name": ' + b"9" * 40 + b"}"):
        platform_error(alice_client.post("/v1/orgs", text, content_type="application/json"), 400, "malformed_json")


# Over-size bodies -------------------------------------------------------------------------------------------

def big_json(size=MIB + 10) -> bytes:
    return b'{"name": "' + b"a" * size + b'"}'


def test_over_size_json_is_413_on_each_service(api, sandbox, no_errors_logged):
    body = platform_error(api.post("/v1/auth/sign-in", big_json(), content_type="application/json"),
                          413, "payload_too_large")
    assert body["details"] == {"maxBytes": MIB}
    client, _ = sandbox
    otp_error(client.post("/api/v1/otp/send", big_json(), content_type="application/json"), 413, "payload_too_large")
    body = warehouse_error(api.post("/api/auth/signup", big_json(), content_type="application/json"),
                           413, "payload_too_large")
    assert body["max_bytes"] == MIB
    assert not OtpRecord.objects.exists() and not User.objects.exists()


def test_content_length_is_checked_before_the_body_is_read(sandbox):
    client, _ = sandbox
    otp_error(client.post("/api/v1/otp/send", b"{}", content_type="application/json", CONTENT_LENGTH=str(2 * MIB)),
              413, "payload_too_large")
    otp_error(client.post("/api/v1/otp/send", b"{}", content_type="application/json", CONTENT_LENGTH="12x"),
              400, "bad_request")


def test_over_size_form_on_a_page_is_an_html_413():
    resp = Client().post("/dashboard/login/", {"email": "a@example.com", "password": "p" * (MIB + 10)})
    assert resp.status_code == 413 and resp["Content-Type"].startswith("text/html")


def asgi_post(path, body: bytes, content_type: str, headers=()):
    """A request without Content-Length (chunked, or HTTP/2), through the ASGI handler."""
    return async_to_sync(AsyncClient().request)(
        method="POST", path=path, _body_file=FakePayload(body),
        headers=[(b"host", b"testserver"), (b"content-type", content_type.encode()), *headers])


def test_over_size_bodies_without_content_length_are_413(no_errors_logged):
    resp = asgi_post("/v1/auth/sign-in", big_json(), "application/json")
    platform_error(resp, 413, "payload_too_large")
    resp = asgi_post("/api/auth/login", big_json(), "application/json")
    warehouse_error(resp, 413, "payload_too_large")
    resp = asgi_post("/dashboard/login/", b"email=a%40example.com&password=" + b"p" * (MIB + 10),
                     "application/x-www-form-urlencoded")
    assert resp.status_code == 413
    # within the limit, a body without a length is read as usual
    resp = asgi_post("/api/auth/login", json.dumps({"email": "nobody@example.com", "password": "x"}).encode(),
                     "application/json")
    warehouse_error(resp, 401, resp.json()["code"])


def test_routes_that_need_more_take_more(alice, alice_client):
    project = ProjectFactory(workspace=alice.memberships.get().workspace, name="Web", slug="web",
                             git_url="file:///nowhere")
    dotenv = "".join(f"KEY_{i}={'é' * 300}\n" for i in range(1500))  # 465,000 characters: within the field
    body = json.dumps({"dotenv": dotenv, "target": ["production"]})  # escaped as \u00e9: 2.7 MB of JSON
    assert MIB < len(body) < 4 * MIB
    url = f"/v1/orgs/acme/projects/{project.pk}/env/import"
    resp = alice_client.post(url, body, content_type="application/json")
    assert resp.status_code == 201 and resp.json()["created"] == 1500, resp.json()
    resp = alice_client.post(url, big_json(4 * MIB), content_type="application/json")
    platform_error(resp, 413, "payload_too_large")


def test_every_route_named_in_the_body_limits_exists(settings):
    from django.utils.module_loading import import_string

    for dotted in settings.REQUEST_BODY_LIMITS:
        assert isinstance(import_string(dotted), type), dotted


def test_an_over_long_idempotency_key_on_a_deploy_hook_is_400_and_changes_nothing(alice, no_errors_logged):
    hook = DeployHookFactory(project=ProjectFactory(workspace=alice.memberships.get().workspace, slug="web"),
                             raw="deploy-hook-secret-long-key")
    resp = APIClient().post("/v1/hooks/deploy/deploy-hook-secret-long-key", HTTP_IDEMPOTENCY_KEY="k" * 65)
    assert "Idempotency-Key" in platform_error(resp, 400, "validation_error")["details"]
    assert not Deployment.objects.exists()
    hook.refresh_from_db()
    assert hook.last_triggered_at is None
