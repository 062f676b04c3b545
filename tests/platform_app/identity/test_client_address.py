"""The client address behind `TRUSTED_PROXY_COUNT` proxies, as recorded on the session a sign-in creates."""
import pytest

from platform_app.models import AuthSession
from tests.factories import PASSWORD, UserFactory
from tests.platform_app.identity.conftest import client_from, counted, sign_in

pytestmark = pytest.mark.django_db


def address_seen(remote: str, forwarded: str | None) -> str:
    user = UserFactory()
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    resp = client_from(remote).post("/v1/auth/sign-in", {"email": user.email, "password": PASSWORD},
                                    format="json", **extra)
    assert resp.status_code == 200, resp.json()
    return AuthSession.objects.get(user=user).ip


@pytest.mark.parametrize("proxies, forwarded, expected", [
    # no proxy: the header is the client's own writing and is ignored
    (0, "1.1.1.1", "10.0.0.9"),
    (0, None, "10.0.0.9"),
    # one proxy: the rightmost entry is what it saw; entries to its left are forged
    (1, "198.51.100.7", "198.51.100.7"),
    (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),
    (1, "6.6.6.6,7.7.7.7,  198.51.100.7 ", "198.51.100.7"),
    # two proxies (CDN, then load balancer): the second entry from the right
    (2, "6.6.6.6, 198.51.100.7, 192.0.2.50", "198.51.100.7"),
    # fewer entries than proxies: the request did not come through them all
    (2, "198.51.100.7", "10.0.0.9"),
    (1, "", "10.0.0.9"),
    # garbage where the address should be
    (1, "6.6.6.6, not-an-ip", "10.0.0.9"),
    (1, "6.6.6.6, 300.1.1.1", "10.0.0.9"),
    (1, "<script>", "10.0.0.9"),
    # ports and IPv6 forms are normalised
    (1, "198.51.100.7:54321", "198.51.100.7"),
    (1, "2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
    (1, "[2001:db8::1]:443", "2001:db8::1"),
    (1, "::ffff:198.51.100.7", "198.51.100.7"),
    (1, "fe80::1%eth0", "fe80::1"),
])
def test_client_address(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    assert address_seen("10.0.0.9", forwarded) == expected


def test_remote_addr_is_normalised_too(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    assert address_seen("2001:0db8:0000::0001", "198.51.100.7") == "2001:db8::1"


def test_forged_leftmost_entries_do_not_escape_the_limit(clock, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    user = UserFactory()
    proxy = client_from("10.0.0.2")
    limit = settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP
    for n in range(limit):
        forged = {"HTTP_X_FORWARDED_FOR": f"10.9.9.{n}, 203.0.113.5"}  # a new leftmost entry every time
        resp = sign_in(proxy, user.email, "wrong-password-1", headers=forged)
        assert resp.status_code == 401
    resp = sign_in(proxy, user.email, headers={"HTTP_X_FORWARDED_FOR": "10.9.9.99, 203.0.113.5"})
    assert resp.status_code == 429
    assert counted(f"signin:pair:{user.email}|203.0.113.5") == limit
    owner = sign_in(proxy, user.email, headers={"HTTP_X_FORWARDED_FOR": "203.0.113.5, 198.51.100.7"})
    assert owner.status_code == 200
