"""Device authorization (RFC 8628) for `svc login`: the device asks for codes, a signed-in user approves the user
code on /device, the device polls and receives an API token once, scoped as approved and never above the role."""
from urllib.parse import urlencode

import pytest
from django.test import Client

from platform_app.models import ApiToken, DeviceAuthorization
from tests.conftest import bearer_client

pytestmark = pytest.mark.django_db
GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def form(api, path, **fields):
    return api.post(path, urlencode(fields), content_type="application/x-www-form-urlencoded")


def start(api, scope="read deploy"):
    resp = form(api, "/v1/auth/device/code", client_id="svc-cli", scope=scope)
    assert resp.status_code == 200, resp.content
    return resp.json()


def poll(api, codes):
    return form(api, "/v1/auth/device/token", grant_type=GRANT, device_code=codes["device_code"], client_id="svc-cli")


def browser_of(user):
    browser = Client()
    browser.force_login(user)
    return browser


def test_a_device_logs_in_once_approved_with_the_scopes_and_workspace_chosen(api, alice, workspace, settings):
    settings.DEVICE_POLL_INTERVAL_SECONDS = 0
    codes = start(api)
    assert codes["verification_uri"].endswith("/device") and codes["interval"] == 0
    assert codes["verification_uri_complete"].endswith(f"/device?code={codes['user_code']}")
    pending = poll(api, codes)
    assert pending.status_code == 400 and pending.json()["error"] == "authorization_pending"

    browser = browser_of(alice)
    page = browser.get("/device", {"code": codes["user_code"]})
    assert page.status_code == 200 and b"svc-cli" in page.content and b'value="deploy"' in page.content
    decided = browser.post("/device", {"code": codes["user_code"].lower().replace("-", ""), "decision": "approve",
                                       "scopes": ["read"], "workspace": "acme"})
    assert decided.status_code == 200 and b"Approved" in decided.content

    got = poll(api, codes)
    assert got.status_code == 200, got.content
    body = got.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "read" and body["access_token"].startswith("svc_")
    token = ApiToken.objects.get(pk=body["token_id"])
    assert token.scopes == ["read"] and token.workspace == workspace and token.user == alice
    me = bearer_client(body["access_token"]).get("/v1/auth/me")
    assert me.status_code == 200
    again = poll(api, codes)  # a device code gives one token
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert ApiToken.objects.count() == 1


def test_denied_expired_and_too_fast_polls_get_oauths_errors(api, alice, settings, travel):
    settings.DEVICE_POLL_INTERVAL_SECONDS = 5
    codes = start(api)
    assert poll(api, codes).json()["error"] == "authorization_pending"
    assert poll(api, codes).json()["error"] == "slow_down"
    browser_of(alice).post("/device", {"code": codes["user_code"], "decision": "deny"})
    travel(6)
    assert poll(api, codes).json()["error"] == "access_denied"
    late = start(api)
    travel(settings.DEVICE_CODE_TTL_SECONDS + 1)
    assert poll(api, late).json()["error"] == "expired_token"
    page = browser_of(alice).get("/device", {"code": late["user_code"]})
    assert page.status_code == 404 and not ApiToken.objects.exists()


def test_a_scope_above_the_role_or_a_workspace_outside_its_allowlist_grants_nothing(api, bob, workspace):
    from tests.platform_app.org.factories import IpAllowlistEntryFactory

    codes = start(api, scope="read admin")
    browser = browser_of(bob)  # a developer
    refused = browser.post("/device", {"code": codes["user_code"], "decision": "approve", "scopes": ["read", "admin"]})
    assert refused.status_code == 403 and b"scope_exceeds_role" in refused.content
    IpAllowlistEntryFactory(workspace=workspace, cidr="203.0.113.0/24")
    outside = browser.post("/device", {"code": codes["user_code"], "decision": "approve", "scopes": ["read"],
                                       "workspace": "acme"})
    assert outside.status_code == 403 and b"ip_not_allowed" in outside.content
    assert DeviceAuthorization.objects.get().status == "pending"


def test_bad_requests_are_oauth_errors_and_store_nothing(api):
    assert form(api, "/v1/auth/device/code", client_id="svc-cli", scope="read root").json()["error"] == "invalid_scope"
    assert form(api, "/v1/auth/device/code", client_id="no spaces").json()["error"] == "invalid_client"
    assert form(api, "/v1/auth/device/token", grant_type="password").json()["error"] == "unsupported_grant_type"
    assert form(api, "/v1/auth/device/token", grant_type=GRANT, device_code="x", client_id="svc-cli").json()[
        "error"] == "invalid_grant"
    broken = api.post("/v1/auth/device/code", "{", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["error"] == "invalid_request"
    assert not DeviceAuthorization.objects.exists()


def test_the_page_asks_a_stranger_to_sign_in_first(api):
    codes = start(api)
    resp = Client().get("/device", {"code": codes["user_code"]})
    assert resp.status_code == 302 and "/dashboard/login/" in resp["Location"]


def test_the_beat_purges_requests_a_day_past_their_expiry(api, travel, settings):
    from platform_app.tasks.identity import device_authorizations_purge

    start(api)
    travel(settings.DEVICE_CODE_TTL_SECONDS + 3600)
    assert device_authorizations_purge() == 0  # expired, kept a day for the record
    travel(86400)
    assert device_authorizations_purge() == 1 and not DeviceAuthorization.objects.exists()
