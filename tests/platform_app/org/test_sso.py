"""Workspace single sign-on through the HTTP API, against the local OpenID provider of the social sign-in tests:
settings (secret never returned, issuer through the outbound guard), the SCIM token, sign-in with PKCE and nonce
(just-in-time accounts and members, linking, refusals) and "require SSO" for sessions, tokens and pages."""
import pytest
from django.core import mail
from django.test import Client

from config.outbound import UNREACHABLE
from platform_app.models import (AuditEvent, AuthSession, Membership, SsoIdentity, SsoSession, User, WorkspaceSso)
from platform_app.providers.oidc import pkce_challenge
from platform_app.services.env.crypto import decrypt
from platform_app.services.identity.keys import sha256_hex
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.org.conftest import bearer, sso_sign_in, sso_start
from tests.platform_app.org.factories import ScimUserFactory, SsoIdentityFactory
from tests.platform_app.providers.test_social_sign_in import CLIENT

pytestmark = pytest.mark.django_db


def put(client, **body):
    return client.put("/v1/orgs/acme/sso", {"enabled": True, "clientId": CLIENT, "allowedDomains": ["example.com"],
                                            **body}, format="json")


# Settings ---------------------------------------------------------------------------------------

def test_settings_round_trip_and_the_secret_is_never_returned(alice_client, workspace_idp):
    before = alice_client.get("/v1/orgs/acme/sso")
    assert before.status_code == 200 and before.json()["enabled"] is False and before.json()["issuer"] == ""
    resp = put(alice_client, issuer=workspace_idp.issuer + "/", clientSecret="top-secret",
               allowedDomains=["Example.com", "@corp.example.org", "example.com"], defaultRole="developer")
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert {"enabled", "issuer", "clientId", "allowedDomains", "requireSso", "scimEnabled"} <= body.keys()
    assert body["enabled"] is True and body["issuer"] == workspace_idp.issuer and body["clientId"] == CLIENT
    assert body["allowedDomains"] == ["example.com", "corp.example.org"] and body["defaultRole"] == "developer"
    assert body["clientSecretSet"] is True and "top-secret" not in resp.content.decode()
    assert body["redirectUris"][0].endswith(f"/v1/auth/sso/{WorkspaceSso.objects.get().workspace_id}/callback")
    row = WorkspaceSso.objects.get()
    assert row.client_secret_encrypted != "top-secret" and decrypt(row.client_secret_encrypted) == "top-secret"
    # a PUT without the secret keeps the stored one
    assert put(alice_client, issuer=workspace_idp.issuer, requireSso=True).status_code == 200
    assert decrypt(WorkspaceSso.objects.get().client_secret_encrypted) == "top-secret"
    assert alice_client.get("/v1/orgs/acme/sso").json()["requireSso"] is True
    assert AuditEvent.objects.filter(action="sso.updated").count() == 2


@pytest.mark.parametrize("issuer", ["https://10.0.0.7", "https://169.254.169.254/latest", "https://localhost",
                                    "ftp://idp.example.com", "file:///etc/passwd"])
def test_an_issuer_the_outbound_guard_refuses_is_400_naming_it(alice_client, issuer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    resp = put(alice_client, issuer=issuer, clientSecret="s")
    assert resp.status_code == 400 and "issuer" in resp.json()["details"], resp.json()
    assert resp.json()["message"] == UNREACHABLE
    assert not WorkspaceSso.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"issuer": "ISSUER", "clientSecret": "s", "allowedDomains": ["not a domain"]}, "allowedDomains"),
    ({"issuer": "ISSUER", "clientSecret": "s", "defaultRole": "owner"}, "defaultRole"),
    ({"issuer": "ISSUER", "clientSecret": "s", "clientId": ""}, "clientId"),
    ({"issuer": "ISSUER"}, "clientSecret"),
    ({"issuer": "", "clientSecret": "s"}, "issuer"),
    ({"issuer": "ISSUER", "clientSecret": "s", "enabled": False, "requireSso": True}, "requireSso"),
    ({"issuer": "ISSUER", "clientSecret": "s", "surprise": 1}, "surprise"),
    ({"issuer": "ISSUER", "clientSecret": "s", "enabled": "yes"}, "enabled"),
])
def test_bad_settings_are_400_naming_the_field_and_write_nothing(alice_client, workspace_idp, body, field):
    body = {k: workspace_idp.issuer if v == "ISSUER" else v for k, v in body.items()}
    resp = put(alice_client, **body)
    assert resp.status_code == 400 and field in resp.json()["details"], resp.json()
    assert not WorkspaceSso.objects.exists()


def test_an_issuer_whose_discovery_names_another_issuer_is_400(alice_client, workspace_idp):
    resp = put(alice_client, issuer=workspace_idp.issuer + "/tenant", clientSecret="s")
    assert resp.status_code == 400 and resp.json()["code"] == "issuer_invalid", resp.json()


def test_only_admins_and_only_members(bob, as_user, charlie, sso_on):
    assert as_user(bob).get("/v1/orgs/acme/sso").status_code == 403
    assert as_user(bob).post("/v1/orgs/acme/sso/scim-token").status_code == 403
    assert as_user(charlie).get("/v1/orgs/acme/sso").status_code == 404


def test_scim_token_is_shown_once_stored_hashed_and_replaced(alice_client, alice, as_token, workspace):
    first = alice_client.post("/v1/orgs/acme/sso/scim-token")
    assert first.status_code == 201 and first.json()["token"].startswith("scim_")
    row = WorkspaceSso.objects.get()
    assert row.scim_token_hash == sha256_hex(first.json()["token"]) and row.scim_enabled and not row.enabled
    assert first.json()["token"] not in alice_client.get("/v1/orgs/acme/sso").content.decode()
    assert bearer(first.json()["token"]).get("/scim/v2/Users").status_code == 200
    second = alice_client.post("/v1/orgs/acme/sso/scim-token")
    assert second.json()["token"] != first.json()["token"]
    assert bearer(first.json()["token"]).get("/scim/v2/Users").status_code == 401
    assert bearer(second.json()["token"]).get("/scim/v2/Users").status_code == 200
    # a token with every scope but admin cannot make one
    assert as_token(alice, scopes=["deploy", "env:write", "domains"]).post(
        "/v1/orgs/acme/sso/scim-token").json()["code"] == "insufficient_scope"


def test_delete_removes_settings_identities_and_scim_but_keeps_members(alice_client, sso_on, workspace, dana):
    MembershipFactory(workspace=workspace, user=dana, role="developer")
    SsoIdentityFactory(workspace=workspace, user=dana)
    ScimUserFactory(workspace=workspace, user=dana)
    resp = alice_client.delete("/v1/orgs/acme/sso")
    assert resp.status_code == 200 and resp.json()["enabled"] is False
    assert not WorkspaceSso.objects.exists() and not SsoIdentity.objects.exists()
    assert Membership.objects.filter(workspace=workspace, user=dana).exists()


# Sign-in ----------------------------------------------------------------------------------------

def test_sign_in_with_pkce_creates_the_account_and_the_member_just_in_time(api, sso_on, workspace_idp, workspace,
                                                                         django_capture_on_commit_callbacks):
    state, query = sso_start(api, workspace_idp, returnTo="/dashboard/acme/")
    assert query["code_challenge_method"] == "S256" and query["client_id"] == CLIENT
    assert query["redirect_uri"].endswith(f"/v1/auth/sso/{workspace.pk}/callback")
    workspace_idp.claims = {"email": "ada@example.com", "name": "Ada Lovelace"}
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.get("/v1/auth/sso/acme/callback", {"code": "the-code", "state": state})
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert body["user"]["email"] == "ada@example.com" and body["returnTo"] == "/dashboard/acme/"
    sent = workspace_idp.token_requests[0]
    assert sent["code"] == "the-code" and pkce_challenge(sent["code_verifier"]) == query["code_challenge"]
    ada = User.objects.get(email="ada@example.com")
    assert ada.name == "Ada Lovelace" and not ada.has_usable_password()
    # the workspace's provider vouches inside the workspace only: the address is verified by the emailed link
    assert ada.email_verified_at is None and body["user"]["emailVerified"] is False
    assert [m.to for m in mail.outbox] == [["ada@example.com"]]
    assert Membership.objects.get(workspace=workspace, user=ada).role == "viewer"
    assert SsoSession.objects.get(session_id=body["sessionId"]).workspace == workspace
    assert bearer(body["accessToken"]).get("/v1/orgs/acme/projects").status_code == 200
    # the state is single use; a second sign-in finds the same account
    again = api.get("/v1/auth/sso/acme/callback", {"code": "the-code", "state": state})
    assert again.status_code == 400 and again.json()["code"] == "invalid_state"
    assert sso_sign_in(api, workspace_idp, email="ada@example.com").json()["user"]["id"] == ada.pk
    assert User.objects.filter(email="ada@example.com").count() == 1 and SsoIdentity.objects.count() == 1


def test_an_existing_account_is_not_taken_over_but_its_owner_can_link_it(api, sso_on, workspace_idp, bob, as_user):
    resp = sso_sign_in(api, workspace_idp, email="bob@example.com")
    assert resp.status_code == 409 and resp.json()["code"] == "sso_link_required"
    assert not SsoIdentity.objects.exists() and not AuthSession.objects.filter(user=bob).exists()
    # signed in, bob links his account: the identity is his from now on
    client = as_user(bob)
    state, _ = sso_start(client, workspace_idp)
    resp = client.get("/v1/auth/sso/acme/callback", {"code": "c", "state": state})
    assert resp.status_code == 200 and resp.json()["user"]["id"] == bob.pk
    assert SsoIdentity.objects.get().user == bob
    assert sso_sign_in(api, workspace_idp, email="bob@example.com").json()["user"]["id"] == bob.pk


@pytest.mark.parametrize("claims, status, code", [
    ({"email": "eve@elsewhere.example"}, 403, "sso_domain_not_allowed"),
    ({"email": "eve@example.com", "email_verified": False}, 409, "email_unverified"),
    ({"email": ""}, 409, "email_missing"),
    ({"email": "eve@example.com", "aud": "someone-else"}, 401, "invalid_id_token"),
    ({"email": "eve@example.com", "nonce": "replayed"}, 401, "invalid_id_token"),
    ({"email": ["eve@example.com"]}, 401, "invalid_id_token"),
    ({"email": "eve@example.com", "email_verified": "yes"}, 401, "invalid_id_token"),
    ({"email": "eve@example.com", "preferred_username": {"x": 1}}, 401, "invalid_id_token"),
])
def test_refused_sign_ins_write_no_account(api, sso_on, workspace_idp, claims, status, code):
    resp = sso_sign_in(api, workspace_idp, **claims)
    assert resp.status_code == status and resp.json()["code"] == code, resp.json()
    assert not User.objects.filter(email__startswith="eve").exists() and not SsoSession.objects.exists()


def test_a_member_deprovisioned_by_scim_cannot_sign_in(api, sso_on, workspace_idp, workspace, dana):
    ScimUserFactory(workspace=workspace, user=dana, active=False, account_created=True)
    resp = sso_sign_in(api, workspace_idp, email="dana@example.com")
    assert resp.status_code == 403 and resp.json()["code"] == "account_deprovisioned"
    assert not Membership.objects.filter(workspace=workspace, user=dana).exists()


def test_start_of_a_workspace_without_sso_is_404_and_the_state_belongs_to_its_workspace(api, sso_on, workspace_idp,
                                                                                       charlie):
    assert api.get("/v1/auth/sso/charlies/start").status_code == 404
    assert api.get("/v1/auth/sso/nowhere/start").json()["code"] == "sso_not_enabled"
    state, _ = sso_start(api, workspace_idp)
    resp = api.get("/v1/auth/sso/charlies/callback", {"code": "c", "state": state})
    assert resp.status_code == 404 and not User.objects.filter(email="ada@example.com").exists()


# Require SSO --------------------------------------------------------------------------------------

@pytest.fixture
def required(sso_on):
    WorkspaceSso.objects.filter(pk=sso_on.pk).update(require_sso=True)
    return sso_on


def test_require_sso_refuses_other_sessions_and_unlinked_tokens(required, workspace, workspace_idp, bob, as_user,
                                                                 as_token, api):
    refused = as_user(bob).get("/v1/orgs/acme/projects")
    assert refused.status_code == 403 and refused.json()["code"] == "sso_required"
    assert refused.json()["details"]["signInUrl"] == "/v1/auth/sso/acme/start"
    token = as_token(bob, scopes=["deploy"], workspace=workspace)
    assert token.get("/v1/orgs/acme/projects").json()["code"] == "sso_required"
    # bob links his identity: SSO sessions pass, and so do his tokens; his password session still does not
    bobs_browser = as_user(bob)
    state, _ = sso_start(bobs_browser, workspace_idp)
    issued = bobs_browser.get("/v1/auth/sso/acme/callback", {"code": "c", "state": state}).json()
    assert bearer(issued["accessToken"]).get("/v1/orgs/acme/projects").status_code == 200
    assert token.get("/v1/orgs/acme/projects").status_code == 200
    assert as_user(bob).get("/v1/orgs/acme/projects").status_code == 403
    # routes outside the workspace are not its business
    assert as_user(bob).get("/v1/auth/me").status_code == 200


def test_owners_are_exempt_break_glass(required, alice_client, settings, alice, as_user):
    assert alice_client.get("/v1/orgs/acme/sso").status_code == 200
    assert alice_client.put("/v1/orgs/acme/sso", {"enabled": True, "issuer": required.issuer, "clientId": CLIENT,
                                                  "allowedDomains": [], "requireSso": False},
                            format="json").status_code == 200
    settings.SSO_REQUIRE_EXEMPT_ROLES = []
    WorkspaceSso.objects.update(require_sso=True)
    assert as_user(alice).get("/v1/orgs/acme/sso").json()["code"] == "sso_required"


def test_require_sso_applies_to_the_dashboard_and_the_dashboard_sign_in_satisfies_it(required, workspace_idp, bob):
    browser = Client()
    browser.force_login(bob)
    refused = browser.get("/dashboard/acme/")
    assert refused.status_code == 403 and "single sign-on" in refused.content.decode()
    SsoIdentityFactory(workspace=required.workspace, user=bob, issuer=workspace_idp.issuer, subject="idp-user-1")
    state, query = sso_start(browser, workspace_idp, path="/sso/{org}/start")
    assert query["redirect_uri"].endswith(f"/sso/{required.workspace_id}/callback")
    done = browser.get(f"/sso/{required.workspace_id}/callback", {"code": "c", "state": state})
    assert done.status_code == 302 and done["Location"] == "/dashboard/acme/"
    assert browser.get("/dashboard/acme/").status_code == 200


def test_the_dashboard_sign_in_signs_in_a_new_member(sso_on, workspace_idp, workspace):
    browser = Client()
    assert browser.get("/sso/?workspace=acme")["Location"] == "/sso/acme/start"
    workspace_idp.claims = {"email": "ada@example.com"}
    state, _ = sso_start(browser, workspace_idp, path="/sso/{org}/start")
    done = browser.get(f"/sso/{workspace.pk}/callback", {"code": "c", "state": state}, follow=True)
    assert done.status_code == 200 and done.wsgi_request.user.email == "ada@example.com"
    assert "Signed in to Acme" in done.content.decode()
    assert "Sign in with single sign-on" in Client().get("/dashboard/login/").content.decode()


def test_an_unknown_user_signing_in_gets_the_default_role(sso_on, workspace_idp, api, workspace, alice_client):
    assert put(alice_client, issuer=workspace_idp.issuer, defaultRole="developer").status_code == 200
    assert sso_sign_in(api, workspace_idp, email="neo@example.com").status_code == 200
    assert Membership.objects.get(user__email="neo@example.com").role == "developer"


def test_a_member_with_a_linked_identity_keeps_one_account(sso_on, workspace_idp, api, workspace):
    user = UserFactory(email="old-address@example.com")
    MembershipFactory(workspace=workspace, user=user, role="developer")
    SsoIdentityFactory(workspace=workspace, user=user, issuer=workspace_idp.issuer, subject="idp-user-1")
    resp = sso_sign_in(api, workspace_idp, email="new-address@example.com")
    assert resp.status_code == 200 and resp.json()["user"]["id"] == user.pk
    assert Membership.objects.get(user=user).role == "developer"
    assert SsoIdentity.objects.get().email == "new-address@example.com"


# The sign-in ends in the browser that started it --------------------------------------------------

def test_a_sign_in_started_by_one_account_cannot_be_completed_by_another_browser(sso_on, workspace_idp, charlie,
                                                                                 as_user, api):
    """charlie (no member of acme) starts signed in and sends the provider URL to a victim: the victim's browser
    lacks the start's cookie, so the callback neither signs in nor links the victim's identity to charlie."""
    attacker = as_user(charlie)
    workspace_idp.claims = {"email": "victim@example.com", "sub": "victim"}
    state, _ = sso_start(attacker, workspace_idp)
    cookie = attacker.cookies["oauth_binding"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == f"/v1/auth/sso/{sso_on.workspace_id}/callback"
    assert 0 < int(cookie["max-age"]) <= 600
    victim = api.get(f"/v1/auth/sso/{sso_on.workspace_id}/callback", {"code": "c", "state": state})
    assert victim.status_code == 403 and victim.json()["code"] == "oauth_state_not_bound"
    assert not SsoIdentity.objects.exists() and not SsoSession.objects.exists()
    # a forged cookie is no better, and the state was not spent: the browser that started it still finishes
    api.cookies["oauth_binding"] = "forged"
    assert api.get("/v1/auth/sso/acme/callback", {"code": "c", "state": state}).status_code == 403
    done = attacker.get(f"/v1/auth/sso/{sso_on.workspace_id}/callback", {"code": "c", "state": state})
    assert done.status_code == 200 and SsoIdentity.objects.get().user == charlie


def test_the_dashboard_sign_in_refuses_a_callback_from_another_browser(sso_on, workspace_idp, charlie):
    attacker = Client()
    attacker.force_login(charlie)
    state, _ = sso_start(attacker, workspace_idp, path="/sso/{org}/start")
    assert attacker.cookies["oauth_binding"]["path"] == f"/sso/{sso_on.workspace_id}/callback"
    victim = Client()
    refused = victim.get(f"/sso/{sso_on.workspace_id}/callback", {"code": "c", "state": state})
    assert refused.status_code == 403 and "started in another browser" in refused.content.decode()
    assert not SsoIdentity.objects.exists() and "_auth_user_id" not in victim.session
