"""DNS verification against a real DNS server on loopback (dnslib): TXT, CNAME and A answers, what a check
that finds nothing says, the beat's re-checks with backoff, and a record that disappears."""
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.models import AuditEvent, Domain
from platform_app.tasks.domains import domains_recheck

pytestmark = pytest.mark.django_db


@pytest.fixture
def add(alice_client, url):
    def make(name: str) -> Domain:
        resp = alice_client.post(url, {"name": name}, format="json")
        assert resp.status_code == 201, resp.json()
        return Domain.objects.get(pk=resp.json()["id"])

    return make


def verify(client, url, domain):
    resp = client.post(f"{url}/{domain.pk}/verify", {}, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def test_a_txt_challenge_verifies(alice_client, url, add, zone):
    domain = add("www.example.com")
    zone.set("_svc-challenge.www.example.com", "TXT", "unrelated", domain.verification_token)
    body = verify(alice_client, url, domain)
    assert body["status"] == "verified" and body["verified"] is True
    assert body["lastCheck"]["found"] == [{"type": "TXT", "value": "unrelated"},
                                          {"type": "TXT", "value": domain.verification_token}]
    domain.refresh_from_db()
    assert domain.status == "verified" and domain.verified_at is not None
    assert domain.next_check_at > timezone.now() + timedelta(hours=23)  # verified: again tomorrow
    event = AuditEvent.objects.get(action="domain.verified")
    assert event.target_id == domain.pk and event.data["from"] == "pending"
    assert ("_svc-challenge.www.example.com", "TXT") in zone.queries


def test_a_cname_to_the_platform_verifies(alice_client, url, add, zone):
    domain = add("shop.example.org")
    zone.set("shop.example.org", "CNAME", "cname.localhost.")
    body = verify(alice_client, url, domain)
    assert body["status"] == "verified"
    assert {"type": "CNAME", "value": "cname.localhost"} in body["lastCheck"]["found"]


def test_an_a_record_at_the_apex_verifies(alice_client, url, add, zone):
    domain = add("example.net")
    zone.set("example.net", "A", "203.0.113.10")
    assert verify(alice_client, url, domain)["status"] == "verified"


def test_a_check_that_finds_nothing_says_what_it_found_and_expected(alice_client, url, add, zone):
    domain = add("www.example.com")
    zone.set("www.example.com", "A", "198.51.100.7")  # pointing elsewhere
    zone.set("_svc-challenge.www.example.com", "TXT", "someone-elses-token")
    body = verify(alice_client, url, domain)
    assert body["status"] == "pending" and body["verified"] is False
    assert body["lastCheck"]["found"] == [{"type": "TXT", "value": "someone-elses-token"},
                                          {"type": "A", "value": "198.51.100.7"}]
    assert body["lastCheck"]["at"].endswith("Z")
    assert {"type": "TXT", "name": "_svc-challenge.www.example.com", "value": domain.verification_token} in \
        body["verification"]
    domain.refresh_from_db()
    assert domain.status == "pending" and domain.check_failures == 1
    assert not AuditEvent.objects.filter(action__in=["domain.verified", "domain.misconfigured"]).exists()


def test_an_unreachable_resolver_changes_no_status(alice_client, url, add, zone, settings):
    domain = add("www.example.com")
    Domain.objects.filter(pk=domain.pk).update(status="verified")
    settings.OUTBOUND_DNS_SERVERS = ["127.0.0.1:9"]  # nothing answers there
    settings.OUTBOUND_DNS_TIMEOUT_SECONDS = 0.3
    body = verify(alice_client, url, domain)
    assert body["status"] == "verified" and body["lastCheck"]["found"] == []
    assert "Timeout" in body["lastCheck"]["error"] or "NoNameservers" in body["lastCheck"]["error"]


def test_the_beat_rechecks_with_backoff_and_marks_a_lost_record_misconfigured(alice, as_user, url, add, zone,
                                                                             travel):
    pending = add("new.example.com")
    kept = add("kept.example.com")
    lost = add("lost.example.com")
    zone.set("kept.example.com", "CNAME", "cname.localhost")
    zone.set("lost.example.com", "A", "203.0.113.10")
    assert domains_recheck() == 3  # every new domain is due at once
    statuses = dict(Domain.objects.values_list("name", "status"))
    assert statuses == {"new.example.com": "pending", "kept.example.com": "verified", "lost.example.com": "verified"}
    # pending: again after a minute, then two, then four...
    travel(61)
    assert domains_recheck() == 1
    travel(61)
    assert domains_recheck() == 0  # backing off: next one two minutes after the last
    travel(60)
    assert domains_recheck() == 1
    assert Domain.objects.get(pk=pending.pk).check_failures == 3
    # the lost record: noticed at the daily check of verified domains
    zone.remove("lost.example.com", "A")
    zone.set("lost.example.com", "TXT", "nothing to see")  # the name still exists
    travel(24 * 3600)
    assert domains_recheck() == 3
    lost.refresh_from_db()
    kept.refresh_from_db()
    assert lost.status == "misconfigured" and lost.status_changed_at > lost.verified_at
    assert kept.status == "verified"
    event = AuditEvent.objects.get(action="domain.misconfigured")
    assert event.target_id == lost.pk and event.data["from"] == "verified"
    answer = as_user(alice).get(url).json()["items"]  # a day later: a fresh session
    assert {d["name"]: d["status"] for d in answer}["lost.example.com"] == "misconfigured"
    # the record comes back: verified again at the next (backed-off) check
    zone.set("lost.example.com", "A", "203.0.113.10")
    travel(61)
    domains_recheck()
    assert Domain.objects.get(pk=lost.pk).status == "verified"


def test_primary_needs_a_verified_domain(alice_client, url, add, zone):
    domain = add("www.example.com")
    resp = alice_client.post(f"{url}/{domain.pk}/primary", {}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "domain_not_verified"
    assert not Domain.objects.get(pk=domain.pk).primary
    zone.set("www.example.com", "A", "203.0.113.10")
    verify(alice_client, url, domain)
    other = add("example.com")
    zone.set("example.com", "A", "203.0.113.10")
    verify(alice_client, url, other)
    assert alice_client.post(f"{url}/{other.pk}/primary", {}, format="json").status_code == 201
    resp = alice_client.post(f"{url}/{domain.pk}/primary", {}, format="json")
    assert resp.status_code == 201 and resp.json()["primary"] is True
    assert dict(Domain.objects.values_list("name", "primary")) == {"www.example.com": True, "example.com": False}


def test_whatever_a_zone_publishes_is_stored_safely(alice_client, url, add, zone):
    domain = add("www.example.com")
    zone.set("_svc-challenge.www.example.com", "TXT", "nul\x00byte\x07bell", ["x" * 150, "y" * 150])
    body = verify(alice_client, url, domain)
    found = body["lastCheck"]["found"]
    assert found[0] == {"type": "TXT", "value": "nul\ufffdbyte\ufffdbell"}
    assert found[1] == {"type": "TXT", "value": "x" * 150 + "y" * 105}  # one record's strings, joined and capped
    assert len(found) == 2 and body["status"] == "pending"
    assert Domain.objects.get().last_check_found == found


def test_staff_check_dns_from_the_admin(client, url, add, zone):
    from django.urls import reverse

    from tests.factories import SuperuserFactory

    domain = add("www.example.com")
    zone.set("www.example.com", "CNAME", "cname.localhost")
    client.force_login(SuperuserFactory(email="staff@example.com"))
    resp = client.post(reverse("admin:platform_app_domain_changelist"),
                       {"action": "check_dns", "_selected_action": [domain.pk]}, follow=True)
    assert resp.status_code == 200
    messages = [str(m) for m in resp.context["messages"]]
    assert messages == ["www.example.com: verified (found CNAME cname.localhost)"]
    assert Domain.objects.get().status == "verified"
    assert AuditEvent.objects.get(action="domain.verified").actor.email == "staff@example.com"
