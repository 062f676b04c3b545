"""Web analytics: the tracker script and its injection, beacons (CORS, bots, limits), the roll-up and reports."""
import json
from datetime import datetime, timezone as dt_timezone

import pytest

from platform_app.models import AnalyticsEvent, AnalyticsVisitor, AnalyticsVitalHour
from platform_app.services.edge.analytics import analytics_set
from platform_app.tasks.edge import analytics_rollup

pytestmark = pytest.mark.django_db

ORIGIN = "http://site.localhost:8000"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"


@pytest.fixture
def enabled(site):
    analytics_set(project=site, enabled=True)
    return site


@pytest.fixture
def beacon(client):
    """`beacon(project, body, ip=..., origin=..., ua=...)` → the answer to a sendBeacon-like POST (text/plain)."""

    def send(project, body, *, ip="203.0.113.7", origin=ORIGIN, ua=BROWSER, raw=None):
        extra = {"HTTP_ORIGIN": origin} if origin else {}
        data = raw if raw is not None else json.dumps(body)
        return client.post(f"/v1/analytics/{getattr(project, 'pk', project)}/beacon", data,
                           content_type="text/plain;charset=UTF-8", REMOTE_ADDR=ip, HTTP_USER_AGENT=ua, **extra)

    return send


def pageview(path="/", **extra):
    return {"type": "pageview", "path": path, **extra}


def vital(name, value, path="/"):
    return {"type": "vital", "path": path, "name": name, "value": value}


# The script --------------------------------------------------------------------------------------

def test_script_is_public_javascript_without_cookies(client, site):
    resp = client.get(f"/v1/analytics/{site.pk}/svc.js")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("application/javascript")
    text = resp.content.decode()
    for needle in ("sendBeacon", "doNotTrack", "globalPrivacyControl", "PerformanceObserver",
                   "largest-contentful-paint", "layout-shift", "first-contentful-paint"):
        assert needle in text
    assert "document.cookie" not in text and "localStorage" not in text
    assert "Set-Cookie" not in resp


def test_script_injected_into_html_of_enabled_projects_only(site, edge, settings):
    tag = f'<script src="{settings.SITE_URL}/v1/analytics/{site.pk}/svc.js" defer></script>'.encode()
    assert tag not in edge("/").content
    analytics_set(project=site, enabled=True)
    home = edge("/").content
    assert tag + b"</head>" in home and home.count(tag) == 1
    assert edge("/").content == home  # served from the cache, injected once
    assert tag + b"</body>" in edge("/about").content  # no <head>: before </body>
    assert edge("/app.js").content == b"console.log(1)"
    assert edge("/admin/").content == b"<h1>Admin</h1>"  # neither: unchanged
    analytics_set(project=site, enabled=False)
    assert tag not in edge("/").content


# Beacons -----------------------------------------------------------------------------------------

def test_beacon_stored_with_cors_for_the_projects_origin(enabled, beacon):
    resp = beacon(enabled, pageview("/docs", referrer="https://news.example.com/item?id=1"))
    assert resp.status_code == 204
    assert resp["Access-Control-Allow-Origin"] == ORIGIN and "Origin" in resp["Vary"]
    event = AnalyticsEvent.objects.get()
    assert (event.type, event.path, event.referrer, event.project_id) == ("pageview", "/docs", "news.example.com",
                                                                           enabled.pk)
    assert len(event.visitor) == 32 and "203.0.113.7" not in event.visitor
    # a link within the site is no referral; a vital carries its name and value
    assert beacon(enabled, pageview("/", referrer=f"{ORIGIN}/docs")).status_code == 204
    assert beacon(enabled, vital("LCP", 1234.5)).status_code == 204
    rows = list(AnalyticsEvent.objects.order_by("id").values_list("referrer", "name", "value"))
    assert rows == [("news.example.com", "", None), ("", "", None), ("", "LCP", 1234.5)]


def test_preflight_answers_the_projects_origins_only(enabled, client):
    url = f"/v1/analytics/{enabled.pk}/beacon"
    ok = client.options(url, HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert ok.status_code == 204 and ok["Access-Control-Allow-Origin"] == ORIGIN
    assert "POST" in ok["Access-Control-Allow-Methods"]
    deployment = enabled.production_deployment
    preview_origin = f"https://site-{deployment.pk[4:12]}.localhost"
    assert client.options(url, HTTP_ORIGIN=preview_origin)["Access-Control-Allow-Origin"] == preview_origin
    for foreign in ("https://evil.example", "http://other.localhost", "http://site.localhost.evil.example"):
        resp = client.options(url, HTTP_ORIGIN=foreign)
        assert resp.status_code == 204 and "Access-Control-Allow-Origin" not in resp


def test_verified_custom_domain_is_an_origin(enabled, beacon):
    from platform_app.models import Domain

    Domain.objects.create(project=enabled, name="www.site.example", status=Domain.Status.VERIFIED,
                          verification_token="t" * 32)
    Domain.objects.create(project=enabled, name="pending.site.example", verification_token="u" * 32)
    assert beacon(enabled, pageview(), origin="https://www.site.example").status_code == 204
    assert beacon(enabled, pageview(), origin="https://pending.site.example").status_code == 204
    assert AnalyticsEvent.objects.count() == 1


@pytest.mark.parametrize("case", ["foreign origin", "no origin", "bot", "no user agent", "headless", "unknown project",
                                  "analytics off"])
def test_ignored_beacons_are_204_and_store_nothing(site, beacon, case):
    if case != "analytics off":
        analytics_set(project=site, enabled=True)
    kwargs = {"foreign origin": {"origin": "https://evil.example"}, "no origin": {"origin": None},
              "bot": {"ua": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
              "no user agent": {"ua": ""}, "headless": {"ua": BROWSER.replace("Chrome", "HeadlessChrome")},
              }.get(case, {})
    project = "prj_doesnotexist000000000" if case == "unknown project" else site
    resp = beacon(project, pageview(), **kwargs)
    assert resp.status_code == 204
    if case in ("foreign origin", "unknown project", "analytics off"):
        assert "Access-Control-Allow-Origin" not in resp
    assert not AnalyticsEvent.objects.exists()


@pytest.mark.parametrize("raw, field", [
    ("{not json", None), ("[1, 2]", "nonFieldErrors"), (json.dumps({"type": "click", "path": "/"}), "type"),
    (json.dumps({"type": "pageview", "path": "no-slash"}), "path"), (json.dumps({"type": "pageview"}), "path"),
    (json.dumps({"type": "vital", "path": "/", "name": "FID", "value": 3}), "name"),
    (json.dumps({"type": "vital", "path": "/", "name": "LCP", "value": -1}), "value"),
    (json.dumps({"type": "vital", "path": "/", "name": "CLS", "value": "0.1"}), "value"),
    (json.dumps({"type": "pageview", "path": "/", "value": 3}), "name"),
    (json.dumps({"type": "pageview", "path": "/", "extra": 1}), "extra"),
    ('{"type": "vital", "path": "/", "name": "LCP", "value": NaN}', None),
])
def test_malformed_beacons_are_400_and_store_nothing(enabled, beacon, raw, field):
    resp = beacon(enabled, None, raw=raw)
    assert resp.status_code == 400
    body = resp.json()
    assert set(body) == {"code", "message", "details", "status"}
    if field:
        assert field in body["details"]
    assert not AnalyticsEvent.objects.exists()


@pytest.mark.parametrize("raw", ["[" * 1000 + "]" * 1000, '{"a":' * 300 + "1" + "}" * 300,
                                 '{"type": "pageview", "path": "/", "referrer": ' + "[" * 33 + "]" * 33 + "}"])
def test_deeply_nested_beacons_are_400_in_the_platform_shape(enabled, beacon, raw):
    """The beacon is text/plain and parsed by the service, not by DRF's parser: the same depth bound applies."""
    assert len(raw) <= 2048
    resp = beacon(enabled, None, raw=raw)
    assert resp.status_code == 400
    assert resp.json()["code"] == "malformed_json" and set(resp.json()) == {"code", "message", "details", "status"}
    assert not AnalyticsEvent.objects.exists()


def test_a_beacon_with_text_the_database_cannot_store_is_400(enabled, beacon):
    resp = beacon(enabled, None, raw='{"type": "pageview", "path": "/\\ud800"}')
    assert resp.status_code == 400 and resp.json()["code"] == "validation_error"
    assert not AnalyticsEvent.objects.exists()


def test_oversized_beacon_is_400(enabled, beacon, settings):
    resp = beacon(enabled, pageview("/" + "a" * settings.ANALYTICS_BEACON_MAX_BYTES))
    assert resp.status_code == 400 and resp.json()["details"] == {"maxBytes": settings.ANALYTICS_BEACON_MAX_BYTES}
    assert not AnalyticsEvent.objects.exists()


def test_beacons_are_rate_limited_per_address(enabled, beacon, settings):
    settings.ANALYTICS_BEACONS_PER_MINUTE = 2
    assert [beacon(enabled, pageview()).status_code for _ in range(3)] == [204, 204, 429]
    assert beacon(enabled, pageview(), ip="2001:db8::1").status_code == 204
    assert AnalyticsEvent.objects.count() == 3


# Roll-up and reports -----------------------------------------------------------------------------

def at(day, hour, minute=0):
    return datetime(2026, 3, day, hour, minute, tzinfo=dt_timezone.utc)


def test_rollup_then_reports_are_exact(alice, as_user, enabled, beacon, time_machine):
    a, b, c = "203.0.113.10", "2001:db8::20", "198.51.100.30"
    time_machine.move_to(at(8, 10), tick=False)  # two days ago
    beacon(enabled, pageview("/", referrer="https://news.example.com/story"), ip=a)
    beacon(enabled, pageview("/about"), ip=a)
    beacon(enabled, pageview("/"), ip=b)
    beacon(enabled, pageview("/"), ip=c)  # one page view: a bounce
    for value in (4000, 1000, 3000, 2000):
        beacon(enabled, vital("LCP", value), ip=b)
    beacon(enabled, vital("CLS", 0.25, "/about"), ip=a)
    time_machine.move_to(at(8, 11, 30), tick=False)
    beacon(enabled, vital("CLS", 0.1, "/about"), ip=b)
    beacon(enabled, pageview("/about", referrer="https://search.example/?q=x"), ip=b)

    time_machine.move_to(at(10, 12, 15), tick=False)  # today
    beacon(enabled, pageview("/", referrer="https://search.example/"), ip=a)  # a new day: a new visitor
    assert analytics_rollup() == 11  # the finished hours; today's 12:00 hour is still open
    assert AnalyticsVisitor.objects.count() == 3 and AnalyticsVitalHour.objects.count() == 3
    assert AnalyticsEvent.objects.count() == 1
    beacon(enabled, vital("TTFB", 120), ip=a)  # not rolled up yet: read from the raw events
    beacon(enabled, pageview("/pricing"), ip=a)

    base = f"/v1/orgs/acme/projects/{enabled.pk}/analytics"
    alice_client = as_user(alice)  # signed in at this (travelled) time
    overview = alice_client.get(f"{base}/overview", {"days": 7})
    assert overview.status_code == 200
    assert overview.json() == {"days": 7, "visitors": 4, "pageViews": 7, "bounceRate": 0.25,
                               "topReferrers": [{"referrer": "news.example.com", "visitors": 1},
                                                {"referrer": "search.example", "visitors": 1}]}
    today = alice_client.get(f"{base}/overview", {"days": 1}).json()
    assert (today["visitors"], today["pageViews"], today["bounceRate"]) == (1, 2, 0.0)

    paths = alice_client.get(f"{base}/top-paths", {"days": 7}).json()
    assert paths == {"items": [{"path": "/", "pageViews": 4, "visitors": 4},
                               {"path": "/about", "pageViews": 2, "visitors": 2},
                               {"path": "/pricing", "pageViews": 1, "visitors": 1}], "nextCursor": None}
    assert len(alice_client.get(f"{base}/top-paths", {"days": 7, "limit": 1}).json()["items"]) == 1

    vitals = alice_client.get(f"{base}/vitals", {"days": 7}).json()
    assert vitals["days"] == 7
    assert vitals["metrics"] == {"LCP": {"p75": 3000.0, "samples": 4}, "CLS": {"p75": 0.25, "samples": 2},
                                 "TTFB": {"p75": 120.0, "samples": 1}, "INP": {"p75": None, "samples": 0},
                                 "FCP": {"p75": None, "samples": 0}}
    about = alice_client.get(f"{base}/vitals", {"days": 7, "path": "/about"}).json()["metrics"]
    assert about["CLS"] == {"p75": 0.25, "samples": 2} and about["LCP"]["samples"] == 0
    assert alice_client.get(f"{base}/vitals", {"days": 1}).json()["metrics"]["LCP"]["samples"] == 0

    # a second roll-up later folds the rest into the same rows
    time_machine.move_to(at(10, 14), tick=False)
    alice_client = as_user(alice)
    assert analytics_rollup() == 3
    assert alice_client.get(f"{base}/overview", {"days": 7}).json() == overview.json()
    assert AnalyticsVisitor.objects.get(day="2026-03-10").paths == {"/": 1, "/pricing": 1}


def test_reports_validate_days_and_need_read(alice_client, enabled, as_token, alice):
    base = f"/v1/orgs/acme/projects/{enabled.pk}/analytics"
    for bad in ("0", "x", "-3"):
        resp = alice_client.get(f"{base}/overview", {"days": bad})
        assert resp.status_code == 400 and "days" in resp.json()["details"]
    assert alice_client.get(f"{base}/vitals", {"days": 10_000}).json()["days"] == 90  # clamped
    assert alice_client.get(f"{base}/vitals", {"days": "9" * 40}).json()["days"] == 90  # however many digits
    reader = as_token(alice, scopes=["read"])
    assert reader.get(f"{base}/top-paths").status_code == 200
    empty = alice_client.get(f"{base}/overview").json()
    assert empty == {"days": 30, "visitors": 0, "pageViews": 0, "bounceRate": 0.0, "topReferrers": []}


def test_a_beacon_costs_one_insert(enabled, beacon):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    assert beacon(enabled, pageview()).status_code == 204  # the origin's host is now known to the edge
    with CaptureQueriesContext(connection) as queries:
        assert beacon(enabled, pageview("/next")).status_code == 204
    assert [q["sql"].split()[0] for q in queries] == ["INSERT"], [q["sql"] for q in queries]


def test_script_injected_into_html_a_running_instance_answers(workspace, httpserver, client):
    """A runtime deployment: the edge proxies to the instance (a real local HTTP server) and adds the script to
    its HTML, not to its JSON."""
    from platform_app.models import Deployment
    from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
    from tests.platform_app.projects.factories import ProjectFactory

    httpserver.expect_request("/").respond_with_data("<html><head></head><body>app</body></html>",
                                                    content_type="text/html; charset=utf-8")
    httpserver.expect_request("/api").respond_with_json({"html": "</head>"})
    project = ProjectFactory(workspace=workspace, slug="app")
    deployment = Deployment.objects.create(project=project, env="production", branch="main", status="ready",
                                           artifact_path="runtime", snapshot={"start": "node server.js"})
    node = AgentNodeFactory(workspace=workspace, host="127.0.0.1", raw="agn_edge_analytics_node")
    InstanceFactory(deployment=deployment, node=node, status="running", port=httpserver.port)
    project.production_deployment = deployment
    project.save()
    analytics_set(project=project, enabled=True)
    page = client.get("/", HTTP_HOST="app.localhost")
    assert page.status_code == 200 and f"/v1/analytics/{project.pk}/svc.js".encode() in page.content
    assert page.content.endswith(b"defer></script></head><body>app</body></html>")
    assert client.get("/api", HTTP_HOST="app.localhost").json() == {"html": "</head>"}
