"""The workspace's Single sign-on and Security tabs: owners and admins change them (same services as the API), the
SCIM token is shown once, developers get 403 and no tab, other workspaces 404."""
import pytest
from django.test import Client

from platform_app.models import IpAllowlistEntry, WorkspaceSso
from platform_app.services.env.crypto import decrypt
from platform_app.services.identity.keys import sha256_hex
from tests.platform_app.providers.test_social_sign_in import CLIENT

pytestmark = pytest.mark.django_db


def browser(user, **extra) -> Client:
    client = Client(**extra)
    client.force_login(user)
    return client


def test_sso_page_saves_settings_and_shows_the_scim_token_once(alice, workspace_idp):
    client = browser(alice)
    html = client.get("/dashboard/acme/sso/").content.decode()
    assert "Single sign-on" in html and 'aria-current="page"' in html and "/v1/auth/sso/" in html
    resp = client.post("/dashboard/acme/sso/", {"enabled": "on", "issuer": workspace_idp.issuer, "client_id": CLIENT,
                                                "client_secret": "page-secret", "allowed_domains": "example.com, corp.example",
                                                "default_role": "developer"})
    assert resp.status_code == 302, resp.content.decode()[:500]
    row = WorkspaceSso.objects.get()
    assert row.enabled and row.allowed_domains == ["example.com", "corp.example"] and row.default_role == "developer"
    assert decrypt(row.client_secret_encrypted) == "page-secret"
    assert "page-secret" not in client.get("/dashboard/acme/sso/").content.decode()
    made = client.post("/dashboard/acme/sso/scim-token")
    token = made.context["scim_token"]
    assert made.status_code == 200 and token in made.content.decode()
    assert WorkspaceSso.objects.get().scim_token_hash == sha256_hex(token)
    assert token not in client.get("/dashboard/acme/sso/").content.decode()
    assert client.post("/dashboard/acme/sso/remove").status_code == 302 and not WorkspaceSso.objects.exists()


def test_sso_page_shows_a_refused_issuer_on_the_form(alice, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    resp = browser(alice).post("/dashboard/acme/sso/", {"enabled": "on", "issuer": "https://10.1.2.3",
                                                        "client_id": CLIENT, "client_secret": "s",
                                                        "default_role": "viewer"})
    assert resp.status_code == 400 and "cannot be reached" in resp.content.decode()
    assert not WorkspaceSso.objects.exists()


def test_security_page_adds_and_removes_networks_with_the_lockout_guard(alice):
    client = browser(alice, REMOTE_ADDR="203.0.113.9")
    html = client.get("/dashboard/acme/security/").content.decode()
    assert "203.0.113.9" in html and "allowlist_clear acme" in html
    refused = client.post("/dashboard/acme/security/", {"cidr": "198.51.100.0/24", "note": "vpn"})
    assert refused.status_code == 400 and "would not be on the allowlist" in refused.content.decode()
    assert client.post("/dashboard/acme/security/", {"cidr": "203.0.113.0/24", "note": "office"}).status_code == 302
    assert client.post("/dashboard/acme/security/", {"cidr": "bogus"}).status_code == 400
    entry = IpAllowlistEntry.objects.get()
    assert client.post("/dashboard/acme/security/", {"cidr": "198.51.100.0/24"}).status_code == 302
    kept = client.post(f"/dashboard/acme/security/{entry.pk}/delete", follow=True)
    assert "Tick the box" in kept.content.decode() and IpAllowlistEntry.objects.count() == 2
    assert client.post(f"/dashboard/acme/security/{entry.pk}/delete", {"confirm": "1"}).status_code == 302
    assert client.get("/dashboard/acme/security/").status_code == 403  # locked out, as confirmed


def test_developers_see_no_tab_and_get_403_others_404(bob, charlie):
    client = browser(bob)
    assert "Single sign-on" not in client.get("/dashboard/acme/").content.decode()
    for path in ("/dashboard/acme/sso/", "/dashboard/acme/security/"):
        assert client.get(path).status_code == 403
    assert client.post("/dashboard/acme/sso/scim-token").status_code == 403
    assert browser(charlie).get("/dashboard/acme/sso/").status_code == 404
    assert not WorkspaceSso.objects.exists()
