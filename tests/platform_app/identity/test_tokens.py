"""API tokens: shown once, stored hashed, scopes, expiry, revocation, audit log."""
import pytest

from platform_app.models import ApiToken, AuditEvent
from platform_app.services.identity.keys import sha256_hex
from tests.conftest import bearer_client
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def create(client, **body):
    body.setdefault("name", "ci")
    body.setdefault("scopes", "read,deploy")
    return client.post("/v1/user/tokens", body, format="json")


def test_token_value_appears_once_and_is_stored_only_as_hash(alice_client):
    resp = create(alice_client, expires="90d")
    assert resp.status_code == 201
    body = resp.json()
    raw = body["token"]
    assert raw.startswith("svc_")
    assert body["scopes"] == ["read", "deploy"]
    assert body["expiresAt"] is not None
    row = ApiToken.objects.get(pk=body["id"])
    assert row.token_hash == sha256_hex(raw)
    for field in ApiToken._meta.fields:
        assert getattr(row, field.attname) != raw
    listed = alice_client.get("/v1/user/tokens").json()["items"]
    assert raw not in str(listed)
    assert set(listed[0]) == {"id", "name", "prefix", "scopes", "orgId", "expiresAt", "lastUsedAt", "revokedAt",
                              "createdAt"}


def test_token_authenticates_and_reports_itself(alice_client, workspace):
    raw = create(alice_client, scopes=["read"], orgId="acme").json()["token"]
    client = bearer_client(raw)
    me = client.get("/v1/auth/me").json()
    assert me["actingAs"]["type"] == "api_token"
    assert me["actingAs"]["scopes"] == ["read"]
    assert me["actingAs"]["orgId"] == workspace.pk
    intro = client.get("/v1/auth/token/introspect").json()
    assert intro["active"] is True and intro["orgId"] == workspace.pk
    assert ApiToken.objects.get().last_used_at is not None


@pytest.mark.parametrize("body, field", [
    ({"scopes": "read,launch"}, "scopes"),
    ({"scopes": ""}, "scopes"),
    ({"scopes": 5}, "scopes"),
    ({"expires": "forever"}, "expires"),
    ({"expires": "0d"}, "expires"),
    ({"expires": "9999d"}, "expires"),
    ({"extra": 1}, "extra"),
])
def test_bad_token_input_is_400_and_writes_nothing(alice_client, body, field):
    resp = create(alice_client, **body)
    assert resp.status_code == 400
    assert field in resp.json()["details"]
    assert ApiToken.objects.count() == 0


def test_revoke_is_immediate(alice_client):
    created = create(alice_client).json()
    client = bearer_client(created["token"])
    assert client.get("/v1/auth/me").status_code == 200
    resp = alice_client.delete(f"/v1/user/tokens/{created['id']}")
    assert resp.status_code == 200
    resp = client.get("/v1/auth/me")
    assert resp.status_code == 401
    assert resp.json()["code"] == "token_revoked"


def test_expired_token_is_401_token_expired(alice_client, travel):
    raw = create(alice_client, expires="12h").json()["token"]
    travel(60 * 60 * 13)
    resp = bearer_client(raw).get("/v1/auth/me")
    assert resp.status_code == 401
    assert resp.json()["code"] == "token_expired"


def test_unknown_token_is_401(api):
    resp = bearer_client("svc_" + "x" * 43).get("/v1/auth/me")
    assert resp.status_code == 401


def test_creation_and_revocation_are_audited(alice_client, workspace, alice):
    created = create(alice_client, orgId="acme").json()
    alice_client.delete(f"/v1/user/tokens/{created['id']}")
    actions = list(AuditEvent.objects.filter(workspace=workspace, target_id=created["id"])
                   .order_by("created_at").values_list("action", "actor"))
    assert actions == [("api_token.created", alice.pk), ("api_token.revoked", alice.pk)]
    assert created["token"] not in str(list(AuditEvent.objects.values("data")))


def test_workspace_tokens_are_bound_and_listed_there(alice_client, workspace):
    resp = alice_client.post("/v1/orgs/acme/api-tokens", {"name": "deployer", "scopes": "deploy"}, format="json")
    assert resp.status_code == 201
    assert resp.json()["orgId"] == workspace.pk
    listed = alice_client.get(f"/v1/orgs/{workspace.pk}/api-tokens").json()["items"]
    assert [t["name"] for t in listed] == ["deployer"]
    resp = alice_client.delete(f"/v1/orgs/acme/api-tokens/{listed[0]['id']}")
    assert resp.status_code == 200
    assert ApiToken.objects.get().revoked_at is not None


def test_token_bound_to_one_workspace_cannot_see_another(alice, alice_client, workspace):
    other = MembershipFactory(user=alice, role="owner").workspace
    raw = create(alice_client, scopes="admin", orgId="acme").json()["token"]
    client = bearer_client(raw)
    assert client.get("/v1/orgs/acme").status_code == 200
    assert client.get(f"/v1/orgs/{other.slug}").status_code == 404
    assert [w["slug"] for w in client.get("/v1/orgs").json()["items"]] == ["acme"]


def test_outsider_cannot_reach_workspace_tokens(as_user, charlie, workspace):
    resp = as_user(charlie).get("/v1/orgs/acme/api-tokens")
    assert resp.status_code == 404
    assert resp.json()["code"] == "not_found"


def test_developer_cannot_manage_workspace_tokens(as_user, bob):
    resp = as_user(bob).post("/v1/orgs/acme/api-tokens", {"name": "x", "scopes": "read"}, format="json")
    assert resp.status_code == 403
    assert resp.json()["code"] == "forbidden"
    assert ApiToken.objects.count() == 0


def test_token_for_a_workspace_you_are_not_in_is_404(alice_client, charlie):
    resp = create(alice_client, orgId="charlies")
    assert resp.status_code == 404
    assert ApiToken.objects.count() == 0
