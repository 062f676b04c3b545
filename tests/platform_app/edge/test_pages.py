"""The project's Firewall and Analytics pages: what each role sees and may change, through the same services."""
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from platform_app.models import AnalyticsSettings, FirewallRule
from tests.platform_app.edge.factories import (AnalyticsEventFactory, AnalyticsSettingsFactory, FirewallEventFactory,
                                               FirewallRuleFactory)

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_firewall_page_lists_rules_and_events(alice, site):
    FirewallRuleFactory(project=site, name="block admin")
    FirewallEventFactory(project=site, ip="2001:db8::9", path="/admin/login")
    FirewallEventFactory(project=site, path="/old", at=timezone.now() - timedelta(hours=30))
    resp = signed_in(alice).get(f"/dashboard/acme/projects/{site.slug}/firewall/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "block admin" in html and "path prefix /admin" in html and "2001:db8::9" in html
    assert "/admin/login" in html and "/old" not in html
    assert 'class="table"' in html and ">Add rule<" in html and 'aria-current="page">Firewall' in html


def test_add_disable_enable_delete_through_the_forms(alice, site, client):
    page = f"/dashboard/acme/projects/{site.slug}/firewall/"
    admin = signed_in(alice)
    resp = admin.post(page, {"name": "v6 office", "action": "deny", "priority": 5, "field": "ip", "op": "cidr",
                             "value": "2001:db8::/32"})
    assert resp.status_code == 302
    rule = FirewallRule.objects.get()
    assert rule.conditions == [{"field": "ip", "op": "cidr", "value": "2001:db8::/32"}] and rule.priority == 5
    assert client.get("/", HTTP_HOST="site.localhost", REMOTE_ADDR="2001:db8::1").status_code == 403
    admin.post(f"{page}{rule.pk}/disable")
    assert FirewallRule.objects.get().enabled is False
    assert client.get("/", HTTP_HOST="site.localhost", REMOTE_ADDR="2001:db8::1").status_code == 200
    admin.post(f"{page}{rule.pk}/enable")
    assert FirewallRule.objects.get().enabled is True
    admin.post(f"{page}{rule.pk}/delete")
    assert not FirewallRule.objects.exists()


def test_bad_rule_is_shown_on_the_form(alice, site):
    resp = signed_in(alice).post(f"/dashboard/acme/projects/{site.slug}/firewall/",
                                 {"name": "bad", "action": "deny", "priority": 1, "field": "ip", "op": "cidr",
                                  "value": "10.0.0.0/40"})
    assert resp.status_code == 400 and "not a valid CIDR" in resp.content.decode()
    assert not FirewallRule.objects.exists()


def test_developer_reads_but_cannot_change(bob, site):
    rule = FirewallRuleFactory(project=site)
    client = signed_in(bob)
    page = client.get(f"/dashboard/acme/projects/{site.slug}/firewall/")
    assert page.status_code == 200 and ">Add rule<" not in page.content.decode()
    assert client.post(f"/dashboard/acme/projects/{site.slug}/firewall/{rule.pk}/delete").status_code == 403
    assert client.post(f"/dashboard/acme/projects/{site.slug}/analytics/", {"action": "enable"}).status_code == 403
    assert FirewallRule.objects.filter(pk=rule.pk).exists() and not AnalyticsSettings.objects.exists()


def test_outsider_gets_404(charlie, site):
    assert signed_in(charlie).get(f"/dashboard/acme/projects/{site.slug}/analytics/").status_code == 404


def test_analytics_page_chart_paths_vitals_and_toggle(alice, site):
    page = f"/dashboard/acme/projects/{site.slug}/analytics/"
    admin = signed_in(alice)
    assert ">Turn analytics on<" in admin.get(page).content.decode()
    assert admin.post(page, {"action": "enable"}).status_code == 302
    assert AnalyticsSettings.objects.get(project=site).enabled is True
    now = timezone.now()
    AnalyticsEventFactory(project=site, path="/pricing", visitor="a", at=now)
    AnalyticsEventFactory(project=site, path="/pricing", visitor="b", at=now)
    AnalyticsEventFactory(project=site, path="/", visitor="a", at=now - timedelta(days=2))
    AnalyticsEventFactory(project=site, type="vital", name="LCP", value=1800, visitor="a", at=now)
    html = admin.get(page, {"days": 7}).content.decode()
    assert "<svg" in html and html.count("<rect") == 7 and "2 page views, 2 visitors" in html
    assert "/pricing" in html and "1800 ms" in html and ">Turn analytics off<" in html
    assert 'aria-current="page">7 days' in html


def test_analytics_off_through_the_page(alice, site):
    AnalyticsSettingsFactory(project=site)
    signed_in(alice).post(f"/dashboard/acme/projects/{site.slug}/analytics/", {"action": "disable"})
    assert AnalyticsSettings.objects.get(project=site).enabled is False
