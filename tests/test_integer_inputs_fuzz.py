"""Every integer the three services read from a client, fed what int() chokes on or misreads: numbers past
Python's 4,300-digit limit and past 64 bits, negatives, words, other scripts' digits, floats, signs and separators.
None may answer 500; errors come in the service's own shape (docs/architecture.md, "Input limits").

Where the integers are (grep `int(`, `query_int`, `isdigit`, path converters): platform `limit` of every cursor
list, `hours`, `days`, `lines`, the log stream's `Last-Event-ID` / `lastEventId`, `DELETE /v1/auth/mfa/{id}`, the
analytics page's `days`, the artifact upload's Content-Length, the git-a installation id, JSON and form integers
(firewall rules, cron retries, alert windows); OTP codes (API and console) and the console log's `page`;
warehouse `page` / `page_size` (API and HTML), `min_area` / `max_area`, JSON quantities, terms and prices. No
route has an `<int:...>` converter."""
import json
import random
import re
import sys
import unicodedata

from urllib.parse import quote

import pytest
from django.test import Client
from rest_framework.test import APIClient

from otp_app.models import OtpRecord
from platform_app.models import Deployment
from tests.factories import UserFactory
from tests.otp_app.conftest import key_client, sandbox  # noqa: F401
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.pages.conftest import sign_in
from tests.platform_app.projects.factories import ProjectFactory
from tests.sse import sse_body
from tests.warehouse_app.conftest import customer, customer_client, imported  # noqa: F401

pytestmark = pytest.mark.django_db

HUGE = "9" * (sys.get_int_max_str_digits() + 700)  # past the digit limit: int() raises ValueError


def unicode_digits(count: int, seed: int) -> list[str]:
    """Numbers written in other scripts' decimal digits (int() reads them; a URL parameter should not)."""
    digits = [chr(c) for c in range(0x80, 0x110000) if unicodedata.category(chr(c)) == "Nd"]
    rng = random.Random(seed)
    return ["".join(rng.choice(digits) for _ in range(rng.randint(1, 8))) for _ in range(count)]


def generated(seed: int = 4300) -> list[str]:
    """Random lengths around the places where integer handling changes: 18-20 digits (64 bits), the digit limit."""
    rng = random.Random(seed)
    limit = sys.get_int_max_str_digits()
    lengths = [rng.randint(1, 18), 19, 20, rng.randint(21, 200), limit - 1, limit, limit + 1, rng.randint(limit, 3 * limit)]
    return ["".join(rng.choice("0123456789") for _ in range(n)) for n in lengths]


VALUES = ["-1", "0", "-" + HUGE, HUGE, "9" * 19, "9" * 20, "abc", "١٢٣", "²", "１２", "", "1.5", "1e3", " 5",
          "+5", "5_0", "0x10", "-0", "٣" * 5000, *unicode_digits(6, seed=7), *generated()]
SHAPES = {
    "platform": lambda body: {"code", "message", "details", "status"} <= set(body),
    "otp": lambda body: set(body) == {"error"} and {"code", "message"} <= set(body["error"]),
    "warehouse": lambda body: isinstance(body.get("error"), str),
}


def check(resp, service: str, value: str):
    """No 500, and an error in the service's shape (JSON services) or an HTML page (pages)."""
    label = f"{service} {value[:20]!r}{'...' if len(value) > 20 else ''}"
    assert resp.status_code < 500, (label, resp.status_code, getattr(resp, "content", b"")[:300])
    if resp.status_code >= 400:
        if service == "page":
            assert resp["Content-Type"].startswith("text/html"), label
        else:
            assert SHAPES[service](resp.json()), (label, resp.json())
    return resp.status_code


def json_values(value: str):
    """The value as a JSON number where it is one, and as a JSON string always."""
    out = [json.dumps(value)]
    if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", value):
        out.append(value)
    return out


def _q(value: str) -> str:
    return quote(value, safe="")


def post_json(client, path, template: str, value: str):
    """POST `template` with `@` replaced by each JSON form of `value`; the statuses."""
    return [client.post(path, template.replace("@", raw), content_type="application/json") for raw in json_values(value)]


@pytest.fixture
def world(alice, workspace):
    project = ProjectFactory(workspace=workspace, name="Site", slug="site", git_url="https://git.example.com/s.git")
    deployment = DeploymentFactory(project=project, env="preview", branch="main", status=Deployment.Status.ERROR)
    return {"project": project, "deployment": deployment}


P = "/v1/orgs/acme/projects/site"
PLATFORM_QUERIES = ["/v1/orgs/acme/members?limit=", "/v1/orgs/acme/activity?limit=", "/v1/orgs/acme/deployments?limit=",
                    f"{P}/firewall/rules?limit=", f"{P}/firewall/events?hours=", f"{P}/firewall/events?limit=",
                    f"{P}/analytics/overview?days=", f"{P}/analytics/top-paths?limit=", f"{P}/analytics/vitals?days=",
                    f"{P}/runtime-logs?lines=", f"{P}/log-drains?limit=", f"{P}/alerts?limit=", f"{P}/cron?limit=",
                    "/v1/auth/sessions?limit=", "/v1/user/tokens?limit="]


@pytest.mark.parametrize("path", PLATFORM_QUERIES)
def test_platform_query_integers(alice_client, world, path):
    for value in VALUES:
        check(alice_client.get(path + _q(value)), "platform", value)


def test_log_stream_resume_position(alice_client, world):
    url = f"/v1/orgs/acme/deployments/{world['deployment'].pk}/logs/stream"
    for value in VALUES:
        by_header = alice_client.get(url, HTTP_LAST_EVENT_ID=value)
        by_query = alice_client.get(f"{url}?lastEventId={_q(value)}")
        for resp in (by_header, by_query):
            if check(resp, "platform", value) == 200:
                sse_body(resp)
    for value in (HUGE, "9" * 20):  # no line has such a number
        assert alice_client.get(url, HTTP_LAST_EVENT_ID=value).status_code == 400
        assert alice_client.get(f"{url}?lastEventId={value}").json()["code"] == "validation_error"


def test_mfa_factor_ids(alice_client):
    for value in VALUES:
        if value.strip() in ("", "totp"):
            continue
        status = check(alice_client.delete(f"/v1/auth/mfa/{_q(value)}"), "platform", value)
        assert status in (404, 405), (value[:20], status)
    assert alice_client.delete(f"/v1/auth/mfa/{HUGE}").json()["code"] == "not_found"


def test_platform_json_and_form_integers(alice, alice_client, world):
    owner = sign_in(alice)
    for value in VALUES:
        for resp in (*post_json(alice_client, f"{P}/firewall/rules",
                                '{"name": "r", "action": "deny", "priority": @, "conditions": []}', value),
                     *post_json(alice_client, f"{P}/firewall/rules",
                                '{"name": "r", "action": "rate_limit", "conditions": [], '
                                '"rateLimit": {"requests": @, "windowSeconds": @}}', value),
                     *post_json(alice_client, f"{P}/cron", '{"schedule": "* * * * *", "path": "/c", "retries": @}',
                                value),
                     *post_json(alice_client, f"{P}/alerts", '{"name": "a", "metric": "deployment_failed", '
                                '"threshold": 1, "windowMinutes": @, "channels": [{"type": "members"}]}', value)):
            check(resp, "platform", value)
        for path, form in ((f"/dashboard/acme/projects/site/cron/", {"schedule": "* * * * *", "timezone": "UTC",
                                                                      "path": "/c", "retries": value}),
                           ("/dashboard/acme/projects/site/alerts/", {"name": "a", "metric": "deployment_failed",
                                                                      "threshold": "1", "window_minutes": value}),
                           ("/dashboard/acme/projects/site/firewall/", {"name": "r", "action": "deny", "field": "path",
                                                                        "op": "eq", "value": "/x", "priority": value})):
            check(owner.post(path, form), "page", value)
        check(owner.get(f"/dashboard/acme/projects/site/analytics/?days={_q(value)}"), "page", value)


def test_headers_and_provider_callbacks(world, api):
    deployment = world["deployment"]
    for value in VALUES:
        resp = api.put(f"/v1/builds/{deployment.pk}/artifact", b"", content_type="application/octet-stream",
                       CONTENT_LENGTH=value)
        check(resp, "platform", value)
        check(api.get(f"/v1/auth/git-a/callback?installation_id={_q(value)}&state=x"), "platform", value)


def test_otp_codes_and_console_page(alice, workspace, sandbox):  # noqa: F811
    client, key = sandbox
    sent = client.post("/api/v1/otp/send", {"recipient": "+14155550123"}, format="json")
    assert sent.status_code == 201, sent.json()
    record_id = sent.json()["id"]
    owner = sign_in(alice)
    for value in VALUES:
        for raw in json_values(value):
            resp = client.post("/api/v1/otp/verify", f'{{"id": "{record_id}", "code": {raw}}}',
                               content_type="application/json")
            check(resp, "otp", value)
        OtpRecord.objects.filter(pk=record_id).update(attempts_left=5)  # keep it verifiable
        check(owner.get(f"/dashboard/otp/acme/log/?page={_q(value)}"), "page", value)
        check(owner.post("/dashboard/otp/acme/sandbox/verify", {"record": record_id, "code": value}), "page", value)


def test_warehouse_paging_api(imported):
    api = APIClient()
    for path in ("/api/warehouses", "/api/warehouses/search?city=Baltimore"):
        sep = "&" if "?" in path else "?"
        for name in ("page", "page_size", "min_area", "max_area"):
            for value in VALUES:
                check(api.get(f"{path}{sep}{name}={_q(value)}"), "warehouse", value)
    for name in ("page", "page_size"):
        resp = api.get(f"/api/warehouses?{name}={HUGE}")
        assert resp.status_code == 400 and resp.json()["code"] == "validation_error"


def test_warehouse_paging_pages(imported):
    browser = Client()
    for path in ("/warehouses/search/?region=maryland&page=", "/warehouses/region/Maryland/?page="):
        for value in VALUES:
            check(browser.get(path + _q(value)), "page", value)
        assert browser.get(path + HUGE).status_code == 404  # a page number, far past the last page


def test_warehouse_json_integers(customer_client, imported):  # noqa: F811
    for value in VALUES:
        for template, path in (
                ('{"facility": "x", "requirement": {"quantity": @, "unit": "pallet", "start_date": "2030-01-01", '
                 '"term_months": @}}', "/api/quotes/rfq"),
                ('{"quote": "Q1", "quantity": @, "term_months": @}', "/api/bookings/create"),
                ('{"booking": "B1", "kind": "receipt", "quantity": @}', "/api/movements"),
                ('{"price": @, "currency": "EUR", "unit": "pallet", "valid_until": "2030-01-01"}',
                 "/api/quotes/Q1/answer")):
            for resp in post_json(customer_client, path, template, value):
                check(resp, "warehouse", value)
