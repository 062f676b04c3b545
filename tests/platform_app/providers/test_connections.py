"""Connecting code hosts to a workspace, listing repositories through their APIs, installations, disconnect."""
from urllib.parse import parse_qs, urlsplit

import pytest

from platform_app.models import GitConnection, GitInstallation
from platform_app.services.env.crypto import decrypt

pytestmark = pytest.mark.django_db


@pytest.fixture
def hosts(httpserver, settings):
    base = httpserver.url_for("").rstrip("/")
    settings.GIT_PROVIDERS = {
        "git-a": {**settings.GIT_PROVIDERS["git-a"], "client_id": "gh", "client_secret": "s", "app_slug": "platform",
                  "token_url": f"{base}/gh/token", "api_url": f"{base}/gh/api", "install_url": f"{base}/gh/apps/{{app}}/new"},
        "git-b": {**settings.GIT_PROVIDERS["git-b"], "client_id": "gl", "client_secret": "s",
                  "token_url": f"{base}/gl/oauth/token", "api_url": f"{base}/gl/api/v4", "web_url": "https://gitlab.example.com"},
        "git-c": {**settings.GIT_PROVIDERS["git-c"], "client_id": "bb", "client_secret": "s",
                  "token_url": f"{base}/bb/token", "api_url": f"{base}/bb/2.0"},
    }
    return httpserver


def test_git_b_connect_list_repos_and_disconnect(alice_client, hosts):
    resp = alice_client.get("/v1/auth/git-b/install", {"orgId": "acme", "returnTo": "/dashboard/acme/"})
    assert resp.status_code == 200
    query = parse_qs(urlsplit(resp.json()["url"]).query)
    assert query["client_id"] == ["gl"] and query["redirect_uri"][0].endswith("/v1/auth/git-b/callback")
    hosts.expect_request("/gl/oauth/token", method="POST").respond_with_json({"access_token": "glpat-token"})
    hosts.expect_request("/gl/api/v4/user").respond_with_json({"id": 7, "username": "ada", "email": "a@example.com"})
    hosts.expect_request("/gl/api/v4/projects", query_string="membership=true&per_page=100",
                         headers={"Authorization": "Bearer glpat-token"}).respond_with_json(
        [{"path_with_namespace": "acme/api", "http_url_to_repo": "https://gitlab.example.com/acme/api.git",
          "default_branch": "main", "visibility": "private"}])
    callback = alice_client.get("/v1/auth/git-b/callback", {"code": "xyz", "state": resp.json()["state"]})
    assert callback.status_code == 200 and callback.json()["account"] == "ada"
    conn = GitConnection.objects.get()
    assert "glpat-token" not in conn.token_encrypted and decrypt(conn.token_encrypted) == "glpat-token"
    assert "token" not in str(alice_client.get("/v1/orgs/acme/git/connections").json())
    repos = alice_client.get("/v1/orgs/acme/git/git-b/repos").json()["items"]
    assert repos == [{"fullName": "acme/api", "cloneUrl": "https://gitlab.example.com/acme/api.git",
                      "defaultBranch": "main", "private": True}]
    from platform_app.services.providers.git_connections import clone_url_for

    assert clone_url_for(workspace=conn.workspace, provider="git-b", repo="acme/api") == \
        "https://oauth2:glpat-token@gitlab.example.com/acme/api.git"
    assert alice_client.delete("/v1/orgs/acme/git/git-b").status_code == 200
    assert GitConnection.objects.count() == 0


def test_git_c_connect_uses_basic_auth_for_the_token(alice_client, hosts):
    state = alice_client.get("/v1/auth/git-c/install", {"orgId": "acme"}).json()["state"]
    hosts.expect_request("/bb/token", method="POST", headers={"Authorization": "Basic YmI6cw=="}).respond_with_json(
        {"access_token": "bb-token"})
    hosts.expect_request("/bb/2.0/user").respond_with_json({"uuid": "{u-1}", "username": "ada"})
    hosts.expect_request("/bb/2.0/user/emails").respond_with_json({"values": []})
    assert alice_client.get("/v1/auth/git-c/callback", {"code": "c", "state": state}).status_code == 200
    assert GitConnection.objects.get().provider == "git-c"


def test_git_a_installation_callback_and_claim(alice_client, hosts, workspace):
    resp = alice_client.get("/v1/auth/git-a/install", {"orgId": "acme"})
    assert resp.json()["url"].startswith(hosts.url_for("/gh/apps/platform/new"))
    done = alice_client.get("/v1/auth/git-a/callback", {"installation_id": "1001", "setup_action": "install",
                                                        "state": resp.json()["state"]})
    assert done.status_code == 200 and done.json()["installationId"] == "1001"
    assert GitInstallation.objects.get(installation_id="1001").workspace == workspace
    # an installation seen only through a webhook is unclaimed until a workspace claims it
    from platform_app.services.providers.git_connections import installation_event

    installation_event(payload={"action": "created", "installation": {"id": 2002, "account": {"login": "acme-org"}}},
                       event="installation")
    alice_client.delete("/v1/orgs/acme/git/git-a")
    unclaimed = alice_client.get("/v1/orgs/acme/git/git-a/unclaimed-installations").json()["items"]
    assert {i["installationId"] for i in unclaimed} == {"1001", "2002"}
    claimed = alice_client.post("/v1/orgs/acme/git/git-a/claim", {"installationId": "2002"}, format="json")
    assert claimed.status_code == 201 and claimed.json()["account"] == "acme-org"
    assert alice_client.post("/v1/orgs/acme/git/git-a/claim", {"installationId": "2002"}, format="json").status_code == 404


def test_tampered_state_writes_nothing(alice_client, hosts):
    state = alice_client.get("/v1/auth/git-b/install", {"orgId": "acme"}).json()["state"]
    resp = alice_client.get("/v1/auth/git-b/callback", {"code": "c", "state": state + "x"})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_state"
    assert GitConnection.objects.count() == 0 and len(hosts.log) == 0


def test_provider_error_on_callback(alice_client, hosts):
    state = alice_client.get("/v1/auth/git-b/install", {"orgId": "acme"}).json()["state"]
    resp = alice_client.get("/v1/auth/git-b/callback", {"error": "access_denied", "state": state})
    assert resp.status_code == 400 and resp.json()["code"] == "provider_denied"
    assert GitConnection.objects.count() == 0


def test_only_admins_connect(as_user, bob, hosts):
    resp = as_user(bob).get("/v1/auth/git-b/install", {"orgId": "acme"})
    assert resp.status_code == 403


def test_outsider_and_unknown_provider(as_user, charlie, alice_client, hosts):
    assert as_user(charlie).get("/v1/auth/git-b/install", {"orgId": "acme"}).status_code == 404
    assert alice_client.get("/v1/orgs/acme/git/git-z/repos").status_code == 404
    assert alice_client.get("/v1/orgs/acme/git/git-b/repos").status_code == 404  # no connection


def test_expired_state_is_refused(alice_client, hosts, travel):
    state = alice_client.get("/v1/auth/git-b/install", {"orgId": "acme"}).json()["state"]
    travel(11 * 60)
    resp = alice_client.get("/v1/auth/git-b/callback", {"code": "c", "state": state})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_state"
    assert GitConnection.objects.count() == 0 and len(hosts.log) == 0


def test_installation_webhook_records_and_removes(api, settings):
    import hashlib
    import hmac
    import json

    settings.GIT_A_WEBHOOK_SECRET = "hook-secret"

    def send(action):
        raw = json.dumps({"action": action, "installation": {"id": 3003, "account": {"login": "org-x"}}}).encode()
        sig = "sha256=" + hmac.new(b"hook-secret", raw, hashlib.sha256).hexdigest()
        return api.generic("POST", "/v1/webhooks/git-a", raw, content_type="application/json",
                           HTTP_X_GIT_EVENT="installation", HTTP_X_GIT_DELIVERY=f"d-{action}",
                           HTTP_X_HUB_SIGNATURE_256=sig)

    assert send("created").status_code == 200
    assert GitInstallation.objects.get().account == "org-x"
    assert send("deleted").status_code == 200
    assert GitInstallation.objects.count() == 0


@pytest.mark.parametrize("code", [None, "", "   "])
def test_blank_code_is_400_before_any_provider_call_and_keeps_the_state(alice_client, hosts, code):
    """Schemathesis (seed 4242): a valid state with a blank code used to ask the provider and answer 502."""
    state = alice_client.get("/v1/auth/git-b/install", {"orgId": "acme"}).json()["state"]
    query = {"state": state} if code is None else {"state": state, "code": code}
    resp = alice_client.get("/v1/auth/git-b/callback", query)
    assert resp.status_code == 400
    assert resp.json()["code"] == "validation_error" and resp.json()["details"] == {"code": ["Required."]}
    assert len(hosts.log) == 0 and GitConnection.objects.count() == 0
    # the state was not spent: the real callback still works
    hosts.expect_request("/gl/oauth/token", method="POST").respond_with_json({"access_token": "glpat-token"})
    hosts.expect_request("/gl/api/v4/user").respond_with_json({"id": 7, "username": "ada", "email": "a@example.com"})
    assert alice_client.get("/v1/auth/git-b/callback", {"code": "xyz", "state": state}).status_code == 200


def test_provider_calls_declare_502(api):
    paths = api.get("/v1/openapi.json").json()["paths"]
    for path in ("/v1/auth/git-a/callback", "/v1/auth/git-a/user-callback", "/v1/auth/git-b/callback",
                 "/v1/auth/git-c/callback", "/v1/auth/git-a/sso/callback", "/v1/auth/git-b/sso/callback",
                 "/v1/auth/idp/callback", "/v1/auth/idp/start", "/v1/orgs/{org_id}/git/{provider}/repos"):
        assert "502" in paths[path]["get"]["responses"], path
    assert "502" in paths["/v1/orgs/{org_id}/doctor-reports/{report_id}/pr"]["post"]["responses"]


def test_a_connection_ends_only_in_the_browser_that_started_it(alice_client, bob, as_user, hosts):
    """A connection started by alice and completed by someone else's browser would store their Git account in
    alice's workspace: refused."""
    state = alice_client.get("/v1/auth/git-b/install", {"orgId": "acme"}).json()["state"]
    refused = as_user(bob).get("/v1/auth/git-b/callback", {"code": "xyz", "state": state})
    assert refused.status_code == 403 and refused.json()["code"] == "oauth_state_not_bound"
    assert not GitConnection.objects.exists()
