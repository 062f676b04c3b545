"""Firewall rules through the API and enforced by the edge; the events they leave."""
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.models import FirewallEvent, FirewallRule
from platform_app.services.edge.firewall import CHALLENGE_PATH
from platform_app.tasks.edge import firewall_events_prune
from tests.platform_app.edge.factories import FirewallEventFactory, FirewallRuleFactory

pytestmark = pytest.mark.django_db


def rules_url(project):
    return f"/v1/orgs/acme/projects/{project.pk}/firewall/rules"


def add(client, project, action, *conditions, **extra):
    body = {"name": f"{action} rule", "action": action, "conditions": list(conditions), **extra}
    resp = client.post(rules_url(project), body, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def cond(field, op, value, **extra):
    return {"field": field, "op": op, "value": value, **extra}


def test_create_list_update_delete(alice_client, site):
    created = add(alice_client, site, "rate_limit", cond("path", "prefix", "/api"),
                  rateLimit={"requests": 5, "windowSeconds": 60}, priority=10)
    assert created["conditions"] == [{"field": "path", "op": "prefix", "value": "/api"}]
    assert created["rateLimit"] == {"requests": 5, "windowSeconds": 60} and created["enabled"] is True
    assert set(created) >= {"id", "name", "priority", "enabled", "action", "conditions", "rateLimit"}
    add(alice_client, site, "deny", cond("ip", "cidr", "2001:db8::/32"), priority=5)
    listed = alice_client.get(rules_url(site)).json()
    assert [r["priority"] for r in listed["items"]] == [5, 10] and listed["nextCursor"] is None

    url = f"{rules_url(site)}/{created['id']}"
    changed = alice_client.patch(url, {"enabled": False, "action": "deny", "rateLimit": None}, format="json")
    assert changed.status_code == 200 and changed.json()["enabled"] is False
    assert changed.json()["rateLimit"] is None
    rule = FirewallRule.objects.get(pk=created["id"])
    assert (rule.enabled, rule.action, rule.rate_limit_requests) == (False, "deny", None)

    assert alice_client.delete(url).json() == {"deleted": True}
    assert not FirewallRule.objects.filter(pk=created["id"]).exists()
    assert alice_client.delete(url).status_code == 404


@pytest.mark.parametrize("condition, field", [
    (cond("ip", "cidr", "10.0.0.0/33"), "conditions[0].value"),
    (cond("ip", "cidr", "2001:db8::/129"), "conditions[0].value"),
    (cond("ip", "eq", "999.1.1.1"), "conditions[0].value"),
    (cond("path", "glob", "/a[b"), "conditions[0].value"),
    (cond("path", "prefix", "no-slash"), "conditions[0].value"),
    (cond("cookie", "eq", "x"), "conditions[0].field"),
    (cond("path", "regex", "/x"), "conditions[0].op"),
    (cond("method", "cidr", "GET"), "conditions[0].op"),
    (cond("header", "eq", "x"), "conditions[0].name"),
    (cond("path", "eq", ""), "conditions[0].value"),
])
def test_bad_conditions_are_400_naming_the_condition(alice_client, site, condition, field):
    resp = alice_client.post(rules_url(site), {"name": "bad", "action": "deny", "conditions": [condition]},
                             format="json")
    assert resp.status_code == 400, resp.json()
    assert resp.json()["code"] == "validation_error" and field in resp.json()["details"]
    assert not FirewallRule.objects.exists()


def test_rate_limit_needs_its_window_and_others_refuse_it(alice_client, site):
    no_window = alice_client.post(rules_url(site), {"name": "r", "action": "rate_limit", "conditions": []},
                                  format="json")
    assert no_window.status_code == 400 and "rateLimit" in no_window.json()["details"]
    extra = alice_client.post(rules_url(site), {"name": "r", "action": "deny", "conditions": [],
                                                "rateLimit": {"requests": 1, "windowSeconds": 1}}, format="json")
    assert extra.status_code == 400
    zero = alice_client.post(rules_url(site), {"name": "r", "action": "rate_limit", "conditions": [],
                                               "rateLimit": {"requests": 0, "windowSeconds": 1}}, format="json")
    assert zero.status_code == 400
    unknown = alice_client.post(rules_url(site), {"name": "r", "action": "deny", "conditions": [], "x": 1},
                                format="json")
    assert unknown.status_code == 400
    assert not FirewallRule.objects.exists()


def test_developer_reads_but_cannot_change_rules(bob, as_user, site):
    client = as_user(bob)
    assert client.get(rules_url(site)).status_code == 200
    assert client.post(rules_url(site), {"name": "x", "action": "deny", "conditions": []},
                       format="json").status_code == 403
    assert not FirewallRule.objects.exists()


# Enforcement through the edge ---------------------------------------------------------------------

def test_deny_by_ipv4_cidr_and_exact_address(alice_client, site, edge):
    add(alice_client, site, "deny", cond("ip", "cidr", "198.51.100.0/24"))
    add(alice_client, site, "deny", cond("ip", "eq", "192.0.2.1"))
    assert edge("/", ip="198.51.100.77").status_code == 403
    assert edge("/", ip="192.0.2.1").status_code == 403
    assert edge("/", ip="192.0.2.2").status_code == 200
    assert edge("/", ip="198.51.101.1").content.startswith(b"<!doctype html>")
    assert FirewallEvent.objects.count() == 2


def test_deny_by_ipv6_cidr_and_address(alice_client, site, edge):
    add(alice_client, site, "deny", cond("ip", "cidr", "2001:db8:abcd::/48"))
    add(alice_client, site, "deny", cond("ip", "eq", "2001:DB8::0001"))  # stored canonical
    mapped = add(alice_client, site, "deny", cond("ip", "eq", "::ffff:192.0.2.44"))
    assert mapped["conditions"][0]["value"] == "192.0.2.44"  # as the client address is written
    assert edge("/", ip="2001:db8:abcd:12::5").status_code == 403
    assert edge("/", ip="2001:db8::1").status_code == 403
    assert edge("/", ip="2001:db8:abce::1").status_code == 200
    assert edge("/", ip="198.51.100.1").status_code == 200  # IPv4 never inside an IPv6 block
    assert edge("/", ip="::ffff:192.0.2.44").status_code == 403
    assert edge("/", ip="192.0.2.44").status_code == 403
    event = FirewallEvent.objects.order_by("at").first()
    assert event.ip == "2001:db8:abcd:12::5"


def test_client_address_behind_trusted_proxies(alice_client, site, edge, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    add(alice_client, site, "deny", cond("ip", "eq", "203.0.113.50"))
    assert edge("/", ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.50").status_code == 403
    # a client-written entry left of the proxy's is not trusted
    assert edge("/", ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.50, 198.51.100.9").status_code == 200
    assert FirewallEvent.objects.get().ip == "203.0.113.50"


def test_path_prefix_glob_eq_contains(alice_client, site, edge):
    add(alice_client, site, "deny", cond("path", "prefix", "/admin"))
    add(alice_client, site, "deny", cond("path", "glob", "/*.js"))
    add(alice_client, site, "deny", cond("path", "eq", "/about"))
    add(alice_client, site, "deny", cond("path", "contains", "wp-login"))
    assert edge("/admin/").status_code == 403
    assert edge("/app.js").status_code == 403
    assert edge("/about").status_code == 403
    assert edge("/x/wp-login.php").status_code == 403
    assert edge("/about.html").status_code == 403  # the file /about serves: a rule holds for each of its names
    assert edge("/").status_code == 200
    assert sorted(FirewallEvent.objects.values_list("path", flat=True)) == ["/about", "/about.html", "/admin/",
                                                                            "/app.js", "/x/wp-login.php"]


def test_method_header_and_user_agent(alice_client, site, edge):
    add(alice_client, site, "deny", cond("method", "eq", "head"))
    add(alice_client, site, "deny", cond("header", "eq", "evil", name="X-Probe"))
    add(alice_client, site, "deny", cond("header", "prefix", "de", name="Accept-Language"))
    add(alice_client, site, "deny", cond("user_agent", "contains", "sqlmap"))
    add(alice_client, site, "deny", cond("user_agent", "glob", "Nikto*"))
    assert edge("/", method="head").status_code == 403
    assert edge("/", HTTP_X_PROBE="evil").status_code == 403
    assert edge("/", HTTP_X_PROBE="good").status_code == 200
    assert edge("/", HTTP_ACCEPT_LANGUAGE="de-CH").status_code == 403
    assert edge("/", HTTP_USER_AGENT="sqlmap/1.7").status_code == 403
    assert edge("/", HTTP_USER_AGENT="Nikto/2.5").status_code == 403
    assert edge("/", HTTP_USER_AGENT="Mozilla/5.0 Nikto").status_code == 200
    assert edge("/").status_code == 200
    assert FirewallEvent.objects.count() == 5
    ua = FirewallEvent.objects.get(user_agent="sqlmap/1.7")
    assert (ua.method, ua.path, ua.action) == ("GET", "/", "deny")


def test_all_conditions_must_match_and_priority_decides(alice_client, site, edge):
    allow = add(alice_client, site, "allow", cond("ip", "eq", "203.0.113.7"), priority=1)
    add(alice_client, site, "deny", cond("path", "prefix", "/admin"), cond("method", "eq", "GET"), priority=2)
    assert edge("/admin/", ip="203.0.113.7").status_code == 200  # allowed first
    assert edge("/admin/", ip="203.0.113.8").status_code == 403
    assert edge("/admin/", ip="203.0.113.8", method="head").status_code == 200  # only one condition matches
    alice_client.patch(f"{rules_url(site)}/{allow['id']}", {"enabled": False}, format="json")
    assert edge("/admin/", ip="203.0.113.7").status_code == 403  # the cache was invalidated on change
    alice_client.patch(f"{rules_url(site)}/{allow['id']}", {"enabled": True, "priority": 3}, format="json")
    assert edge("/admin/", ip="203.0.113.7").status_code == 403  # now after the deny


def test_rate_limit_per_client_address(alice_client, site, edge):
    rule = add(alice_client, site, "rate_limit", cond("path", "prefix", "/"),
               rateLimit={"requests": 3, "windowSeconds": 60})
    assert [edge("/", ip="203.0.113.1").status_code for _ in range(4)] == [200, 200, 200, 429]
    limited = edge("/", ip="203.0.113.1")
    assert limited.status_code == 429 and 1 <= int(limited["Retry-After"]) <= 60
    assert edge("/", ip="2001:db8::7").status_code == 200  # another address has its own count
    events = list(FirewallEvent.objects.values_list("rule_id", "action", "ip"))
    assert events == [(rule["id"], "rate_limit", "203.0.113.1")] * 2


def test_challenge_page_then_cookie(alice_client, site, client):
    add(alice_client, site, "challenge", cond("path", "prefix", "/admin"))
    page = client.get("/admin/?x=1", HTTP_HOST="site.localhost", REMOTE_ADDR="203.0.113.7")
    assert page.status_code == 403 and b"<form method=post" in page.content
    token = page.content.split(b"name=token value='")[1].split(b"'")[0].decode()
    assert FirewallEvent.objects.get().action == "challenge"
    # a token is bound to the address it was issued to
    other = client.post(CHALLENGE_PATH, {"token": token, "next": "/admin/"}, HTTP_HOST="site.localhost",
                        REMOTE_ADDR="203.0.113.8")
    assert other.status_code == 403
    passed = client.post(CHALLENGE_PATH, {"token": token, "next": "/admin/?x=1"}, HTTP_HOST="site.localhost",
                         REMOTE_ADDR="203.0.113.7")
    assert passed.status_code == 302 and passed["Location"] == "/admin/?x=1"
    ok = client.get("/admin/", HTTP_HOST="site.localhost", REMOTE_ADDR="203.0.113.7")
    assert ok.status_code == 200 and ok.content == b"<h1>Admin</h1>"
    assert FirewallEvent.objects.count() == 1
    # the cookie is worth nothing from another address
    assert client.get("/admin/", HTTP_HOST="site.localhost", REMOTE_ADDR="203.0.113.8").status_code == 403


def test_challenge_answers_are_rate_limited(alice_client, site, client, settings):
    settings.FIREWALL_CHALLENGE_PER_MINUTE = 2
    add(alice_client, site, "challenge", cond("path", "prefix", "/"))
    codes = [client.post(CHALLENGE_PATH, {"token": "forged", "next": "/"}, HTTP_HOST="site.localhost",
                         REMOTE_ADDR="203.0.113.7").status_code for _ in range(3)]
    assert codes == [403, 403, 429]


def test_rules_apply_to_their_project_only(alice_client, site, edge, client):
    from tests.platform_app.deployments.factories import DeploymentFactory
    from tests.platform_app.projects.factories import ProjectFactory

    other = ProjectFactory(workspace=site.workspace, slug="other")
    other.production_deployment = DeploymentFactory(project=other, env="production", status="ready",
                                                    artifact_path="site-1")
    other.save()
    add(alice_client, site, "deny", cond("path", "prefix", "/"))
    assert edge("/").status_code == 403
    assert client.get("/", HTTP_HOST="other.localhost", REMOTE_ADDR="203.0.113.7").status_code == 200
    assert client.get("/health", REMOTE_ADDR="203.0.113.7").status_code == 200  # the platform itself


# Events -------------------------------------------------------------------------------------------

def test_events_filtered_by_hours_and_limit(alice_client, site):
    now = timezone.now()
    for hours_ago in (1, 2, 5, 30):
        FirewallEventFactory(project=site, at=now - timedelta(hours=hours_ago), path=f"/h{hours_ago}")
    FirewallEventFactory(path="/other-project")
    url = f"/v1/orgs/acme/projects/{site.pk}/firewall/events"
    day = alice_client.get(url).json()
    assert [e["path"] for e in day["items"]] == ["/h1", "/h2", "/h5"]
    assert set(day["items"][0]) >= {"at", "ruleId", "action", "ip", "method", "path", "userAgent"}
    assert [e["path"] for e in alice_client.get(url, {"hours": 3}).json()["items"]] == ["/h1", "/h2"]
    assert len(alice_client.get(url, {"hours": 48}).json()["items"]) == 4
    first = alice_client.get(url, {"hours": 48, "limit": 3}).json()
    assert [e["path"] for e in first["items"]] == ["/h1", "/h2", "/h5"] and first["nextCursor"]
    rest = alice_client.get(url, {"hours": 48, "limit": 3, "cursor": first["nextCursor"]}).json()
    assert [e["path"] for e in rest["items"]] == ["/h30"] and rest["nextCursor"] is None
    for bad in ({"hours": "x"}, {"hours": 0}, {"limit": "-1"}, {"limit": "1.5"}):
        resp = alice_client.get(url, bad)
        assert resp.status_code == 400 and set(resp.json()["details"]) == set(bad)


def test_prune_keeps_the_retention_window(site, settings):
    settings.FIREWALL_EVENT_RETENTION_HOURS = 24
    FirewallEventFactory(project=site, at=timezone.now() - timedelta(hours=25))
    kept = FirewallEventFactory(project=site, at=timezone.now() - timedelta(hours=23))
    assert firewall_events_prune() == 1
    assert list(FirewallEvent.objects.all()) == [kept]


def test_rule_factory_rule_is_enforced_after_a_save(site, edge):
    assert edge("/admin/").status_code == 200  # cached: no rules
    FirewallRuleFactory(project=site)  # saved outside the API (admin): the save invalidates the cache too
    assert edge("/admin/").status_code == 403


def test_user_agent_and_header_values_match_whatever_their_case(alice_client, site, edge):
    add(alice_client, site, "deny", cond("user_agent", "contains", "evilbot"))
    add(alice_client, site, "deny", cond("user_agent", "eq", "Scanner/1.0"))
    add(alice_client, site, "deny", cond("header", "eq", "evil", name="X-Probe"))
    assert edge("/", HTTP_USER_AGENT="Mozilla/5.0 (compatible; EvilBot/2.1)").status_code == 403
    assert edge("/", HTTP_USER_AGENT="SCANNER/1.0").status_code == 403
    assert edge("/", HTTP_X_PROBE="EVIL").status_code == 403
    assert edge("/", HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)",
                HTTP_X_PROBE="good").status_code == 200


def test_a_header_sent_twice_matches_by_each_of_its_values(alice_client, site, edge):
    """The server joins a repeated header with commas (`X-Debug: 1` twice reads `1,1`); each value is tried."""
    add(alice_client, site, "deny", cond("header", "eq", "1", name="X-Debug"))
    add(alice_client, site, "deny", cond("header", "prefix", "curl", name="X-Client"))
    assert edge("/", HTTP_X_DEBUG="1").status_code == 403
    assert edge("/", HTTP_X_DEBUG="1,1").status_code == 403
    assert edge("/", HTTP_X_DEBUG="0, 1").status_code == 403
    assert edge("/", HTTP_X_CLIENT="browser,curl/8.4").status_code == 403
    assert edge("/", HTTP_X_DEBUG="0,0").status_code == 200
