"""The IP allowlist through the HTTP API: entries (CIDRs, IPv4 and IPv6, normalised; bad ones 400), the lockout
guard (409 unless confirmed), and enforcement by client address on the workspace's routes and pages, behind a
trusted proxy; the break-glass command."""
import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from platform_app.models import AuditEvent, IpAllowlistEntry
from platform_app.services.identity.auth import session_start
from tests.platform_app.org.factories import IpAllowlistEntryFactory

pytestmark = pytest.mark.django_db
URL = "/v1/orgs/acme/sso/ip-allowlist"
PROXY = "10.0.0.2"  # our load balancer; it appends the address it saw to X-Forwarded-For


@pytest.fixture
def behind_proxy(settings):
    settings.TRUSTED_PROXY_COUNT = 1


def from_address(user, address: str, forged: str = "") -> APIClient:
    """alice's session, through our proxy, from `address` (a forged entry may sit to its left)."""
    client = APIClient(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=", ".join(filter(None, [forged, address])))
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {session_start(user=user).access_token}")
    return client


def add(client, cidr, **body):
    return client.post(URL, {"cidr": cidr, **body}, format="json")


def test_entries_are_normalised_listed_and_deleted(alice, behind_proxy):
    client = from_address(alice, "203.0.113.9")
    first = add(client, "203.0.113.77/24", note="office")
    assert first.status_code == 201, first.json()
    assert first.json()["cidr"] == "203.0.113.0/24" and first.json().keys() == {"id", "cidr", "note", "createdAt"}
    assert add(client, "2001:DB8:0:0::1/48").json()["cidr"] == "2001:db8::/48"
    assert add(client, "198.51.100.7").json()["cidr"] == "198.51.100.7/32"
    assert add(client, "::ffff:192.0.2.0/120").json()["cidr"] == "192.0.2.0/24"
    listed = client.get(URL).json()
    assert len(listed["items"]) == 4 and listed["nextCursor"] is None
    dup = add(client, "203.0.113.0/24")
    assert dup.status_code == 409 and dup.json()["code"] == "duplicate"
    entry = IpAllowlistEntry.objects.get(cidr="2001:db8::/48")
    assert client.delete(f"{URL}/{entry.pk}").json() == {"deleted": True}
    assert IpAllowlistEntry.objects.count() == 3
    assert AuditEvent.objects.filter(action="ip_allowlist.added").count() == 4


@pytest.mark.parametrize("cidr", ["10.0.0.0/33", "not-an-ip", "2001:db8::/129", "", "10.0.0.1 /8", "fe80::1%eth0",
                                  "1.2.3.4/8/8"])
def test_an_invalid_cidr_is_400_naming_it(alice_client, cidr):
    resp = add(alice_client, cidr, confirm=True)
    assert resp.status_code == 400 and "cidr" in resp.json()["details"], resp.json()
    assert not IpAllowlistEntry.objects.exists()


def test_an_entry_that_locks_the_caller_out_is_409_unless_confirmed(alice, behind_proxy):
    client = from_address(alice, "203.0.113.9")
    refused = add(client, "198.51.100.0/24")
    assert refused.status_code == 409 and refused.json()["code"] == "allowlist_lockout"
    assert refused.json()["details"] == {"ip": "203.0.113.9"} and not IpAllowlistEntry.objects.exists()
    assert add(client, "203.0.113.0/24").status_code == 201
    # now in force: another network no longer locks the caller out (the caller's is on the list)
    assert add(client, "198.51.100.0/24").status_code == 201
    mine = IpAllowlistEntry.objects.get(cidr="203.0.113.0/24")
    refused = client.delete(f"{URL}/{mine.pk}")
    assert refused.status_code == 409 and refused.json()["code"] == "allowlist_lockout"
    assert client.delete(f"{URL}/{mine.pk}?confirm=true").status_code == 200
    assert client.get(URL).json()["code"] == "ip_not_allowed"  # as confirmed: locked out


def test_confirm_adds_it_anyway_and_the_caller_is_locked_out(alice, behind_proxy):
    client = from_address(alice, "203.0.113.9")
    assert add(client, "198.51.100.0/24", confirm=True).status_code == 201
    resp = client.get("/v1/orgs/acme/projects")
    assert resp.status_code == 403 and resp.json()["code"] == "ip_not_allowed"
    assert resp.json()["details"] == {"ip": "203.0.113.9"}


@pytest.mark.parametrize("address, allowed", [
    ("203.0.113.9", True), ("203.0.113.255", True), ("203.0.114.1", False),
    ("2001:db8:aa::5", True), ("2001:db8:ab::5", False), ("::ffff:203.0.113.4", True),
    ("[2001:db8:aa::1]:443", True),
])
def test_requests_are_allowed_and_refused_by_address_behind_a_trusted_proxy(alice, workspace, behind_proxy,
                                                                            address, allowed):
    IpAllowlistEntryFactory(workspace=workspace, cidr="203.0.113.0/24")
    IpAllowlistEntryFactory(workspace=workspace, cidr="2001:db8:aa::/48")
    resp = from_address(alice, address).get("/v1/orgs/acme/projects")
    assert resp.status_code == (200 if allowed else 403), resp.json()
    if not allowed:
        assert resp.json()["code"] == "ip_not_allowed"


def test_a_forged_leftmost_entry_does_not_get_in(alice, workspace, behind_proxy):
    IpAllowlistEntryFactory(workspace=workspace, cidr="203.0.113.0/24")
    assert from_address(alice, "198.51.100.7", forged="203.0.113.9").get(
        "/v1/orgs/acme/projects").status_code == 403
    assert from_address(alice, "203.0.113.9", forged="198.51.100.7").get(
        "/v1/orgs/acme/projects").status_code == 200


def test_without_a_trusted_proxy_the_header_is_ignored(alice, workspace, settings):
    settings.TRUSTED_PROXY_COUNT = 0
    IpAllowlistEntryFactory(workspace=workspace, cidr="203.0.113.0/24")
    assert from_address(alice, "203.0.113.9").get("/v1/orgs/acme/projects").status_code == 403  # REMOTE_ADDR=proxy


def test_pages_are_refused_too_and_other_workspaces_are_not_affected(alice, charlie, workspace, behind_proxy):
    IpAllowlistEntryFactory(workspace=workspace, cidr="203.0.113.0/24")
    browser = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.7")
    browser.force_login(alice)
    page = browser.get("/dashboard/acme/")
    assert page.status_code == 403 and "IP allowlist" in page.content.decode()
    assert browser.get("/dashboard/").status_code == 200  # the workspace list is not the workspace
    allowed = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.10")
    allowed.force_login(alice)
    assert allowed.get("/dashboard/acme/").status_code == 200
    assert from_address(charlie, "198.51.100.7").get("/v1/orgs/charlies/projects").status_code == 200


def test_another_workspaces_entry_is_404(alice_client, charlie):
    theirs = IpAllowlistEntryFactory(workspace=charlie.workspaces.get(), cidr="198.51.100.0/24")
    assert alice_client.delete(f"{URL}/{theirs.pk}?confirm=true").status_code == 404
    assert IpAllowlistEntry.objects.filter(pk=theirs.pk).exists()


def test_developers_cannot_change_it(bob, as_user):
    assert add(as_user(bob), "127.0.0.1/32").status_code == 403 and not IpAllowlistEntry.objects.exists()


def test_break_glass_command_clears_the_list(alice, workspace, behind_proxy, capsys):
    IpAllowlistEntryFactory(workspace=workspace, cidr="198.51.100.0/24")
    IpAllowlistEntryFactory(workspace=workspace, cidr="2001:db8::/32")
    client = from_address(alice, "203.0.113.9")
    assert client.get("/v1/orgs/acme/projects").status_code == 403
    call_command("allowlist_clear", "acme")
    assert "Removed 2 allowlist entries of acme" in capsys.readouterr().out
    assert client.get("/v1/orgs/acme/projects").status_code == 200
    assert AuditEvent.objects.get(action="ip_allowlist.cleared").data["entries"] == 2
