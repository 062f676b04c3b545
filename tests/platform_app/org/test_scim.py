"""SCIM 2.0 at /scim/v2/ after RFC 7644's examples (create 3.3, filter 3.4.2.2, replace 3.5.1, patch 3.5.2,
delete 3.6): accounts and memberships follow the directory, a deactivated user loses access at once, groups named
like roles give roles, and every error is in SCIM's error schema."""
import json

import pytest
from django.contrib.admin.utils import quote

from platform_app.models import ApiToken, AuthSession, Membership, ScimGroup, ScimUser, User
from tests.conftest import all_at_once
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.org.conftest import SCIM_JSON, SCIM_TOKEN, bearer
from tests.platform_app.org.factories import SsoSessionFactory, WorkspaceSsoFactory

pytestmark = pytest.mark.django_db

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"

# RFC 7644 3.3's User, with the work email of RFC 7643 8.2 (a platform account needs an address)
BJENSEN = {"schemas": [USER], "userName": "bjensen", "externalId": "bjensen",
           "name": {"formatted": "Ms. Barbara J Jensen III", "familyName": "Jensen", "givenName": "Barbara"},
           "emails": [{"value": "bjensen@example.com", "type": "work", "primary": True}]}


@pytest.fixture
def scim_on(workspace, alice):
    return WorkspaceSsoFactory(workspace=workspace, enabled=False, issuer="", scim_raw=SCIM_TOKEN)


def send(client, method, path, body=None):
    data = json.dumps(body) if body is not None else None
    return getattr(client, method)(f"/scim/v2{path}", data=data, content_type=SCIM_JSON)


def create(scim, body=BJENSEN):
    resp = send(scim, "post", "/Users", body)
    assert resp.status_code == 201, resp.content
    return resp.json()


def scim_error(resp, status, scim_type=None):
    body = resp.json()
    assert resp.status_code == status, body
    assert body["schemas"] == [ERROR] and body["status"] == str(status) and body["detail"], body
    assert body.get("scimType") == scim_type, body
    return body


def test_create_answers_the_resource_with_its_location_and_makes_a_member(scim, scim_on, workspace):
    resp = send(scim, "post", "/Users", BJENSEN)
    assert resp.status_code == 201 and resp["Content-Type"].startswith(SCIM_JSON)
    body = resp.json()
    assert body["schemas"] == [USER] and body["userName"] == "bjensen" and body["externalId"] == "bjensen"
    assert body["name"]["givenName"] == "Barbara" and body["active"] is True and body["groups"] == []
    assert body["meta"]["resourceType"] == "User" and resp["Location"] == body["meta"]["location"]
    assert body["meta"]["location"].endswith(f"/scim/v2/Users/{body['id']}")
    account = User.objects.get(email="bjensen@example.com")
    assert account.name == "Barbara Jensen" and not account.has_usable_password()
    assert Membership.objects.get(workspace=workspace, user=account).role == "viewer"
    assert send(scim, "get", f"/Users/{body['id']}").json() == body


def test_duplicate_user_name_is_409_uniqueness_whatever_its_case(scim, scim_on):
    create(scim)
    scim_error(send(scim, "post", "/Users", {**BJENSEN, "userName": "BJensen",
                                             "emails": [{"value": "other@example.com"}]}), 409, "uniqueness")
    scim_error(send(scim, "post", "/Users", {**BJENSEN, "userName": "babs"}), 409, "uniqueness")  # same account
    assert ScimUser.objects.count() == 1


def test_an_existing_account_is_not_taken_over_by_scim(scim, scim_on, workspace, dana):
    resp = send(scim, "post", "/Users", {"schemas": [USER], "userName": "dana@example.com"})
    scim_error(resp, 409, "uniqueness")
    assert not ScimUser.objects.exists() and User.objects.filter(email="dana@example.com").count() == 1
    assert not Membership.objects.filter(workspace=workspace, user=dana).exists()


def test_filter_and_paging(scim, scim_on):
    for name in ("bjensen", "jsmith", "mdoe"):
        create(scim, {"schemas": [USER], "userName": name, "emails": [{"value": f"{name}@example.com"}]})
    found = send(scim, "get", '/Users?filter=userName eq "BJENSEN"').json()
    assert found["schemas"] == [LIST] and found["totalResults"] == 1 and found["itemsPerPage"] == 1
    assert found["Resources"][0]["userName"] == "bjensen"
    assert send(scim, "get", '/Users?filter=userName eq "nobody"').json()["totalResults"] == 0
    page = send(scim, "get", "/Users?startIndex=2&count=1").json()
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (3, 2, 1)
    assert page["Resources"][0]["userName"] == "jsmith"
    assert send(scim, "get", "/Users?count=0").json()["Resources"] == []
    scim_error(send(scim, "get", '/Users?filter=name.familyName co "J"'), 400, "invalidFilter")
    scim_error(send(scim, "get", "/Users?startIndex=two"), 400, "invalidValue")


def test_replace_updates_the_record_and_the_account_it_created(scim, scim_on):
    user = create(scim)
    replaced = {**BJENSEN, "userName": "bjensen2", "name": {"givenName": "Babs", "familyName": "Jensen"},
                "emails": [{"value": "babs@example.com", "type": "work", "primary": True}], "externalId": ""}
    resp = send(scim, "put", f"/Users/{user['id']}", replaced)
    assert resp.status_code == 200, resp.json()
    assert resp.json()["userName"] == "bjensen2" and "externalId" not in resp.json()
    account = ScimUser.objects.get(pk=user["id"]).user
    assert account.email == "babs@example.com" and account.name == "Babs Jensen"


def test_patch_active_false_removes_the_member_and_their_access_at_once(scim, scim_on, workspace, as_token,
                                                                       as_user):
    user = create(scim)
    account = User.objects.get(email="bjensen@example.com")
    Membership.objects.filter(user=account).update(role="developer")
    token = as_token(account, scopes=["deploy"], workspace=workspace)
    session = as_user(account)
    sso_session = AuthSession.objects.filter(user=account).latest("created_at")
    SsoSessionFactory(session=sso_session, workspace=workspace)
    assert token.get("/v1/orgs/acme/projects").status_code == 200
    resp = send(scim, "patch", f"/Users/{user['id']}", {
        "schemas": [PATCH], "Operations": [{"op": "replace", "path": "active", "value": False}]})
    assert resp.status_code == 200 and resp.json()["active"] is False
    assert not Membership.objects.filter(workspace=workspace, user=account).exists()
    assert token.get("/v1/orgs/acme/projects").json()["code"] == "token_revoked"
    assert session.get("/v1/orgs/acme/projects").status_code == 401  # the session started through SSO
    assert ApiToken.objects.get(user=account).revoked_reason == "member_removed"
    # active again (Azure's shape: no path, the value a string): a member again, tokens stay revoked
    resp = send(scim, "patch", f"/Users/{user['id']}", {
        "schemas": [PATCH], "Operations": [{"op": "Replace", "value": {"active": "True"}}]})
    assert resp.status_code == 200 and resp.json()["active"] is True
    assert Membership.objects.get(workspace=workspace, user=account).role == "viewer"
    assert token.get("/v1/orgs/acme/projects").status_code == 401


def test_patch_replaces_name_and_emails(scim, scim_on):
    user = create(scim)
    resp = send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "name.familyName", "value": "Jensen-Smith"},
        {"op": "replace", "path": 'emails[type eq "work"].value', "value": "barbara@example.com"},
        {"op": "add", "path": "emails", "value": [{"value": "babs@home.example.com", "type": "home"}]},
        {"op": "replace", "path": "urn:ietf:params:scim:schemas:core:2.0:User:displayName", "value": "Babs"},
        {"op": "add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
         "value": "Tour Operations"},
        {"op": "replace", "value": {"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"manager": {}},
                                    "name.givenName": "Barbara"}}]})
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert body["name"]["familyName"] == "Jensen-Smith" and body["displayName"] == "Babs"
    assert [e["value"] for e in body["emails"]] == ["barbara@example.com", "babs@home.example.com"]
    assert ScimUser.objects.get().user.email == "barbara@example.com"
    scim_error(send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "password", "value": "x"}]}), 400, "invalidPath")
    scim_error(send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": "userName"}]}), 400, "mutability")
    scim_error(send(scim, "patch", f"/Users/{user['id']}", {"Operations": [{"op": "move", "path": "active"}]}),
               400, "invalidSyntax")


def test_delete_is_204_and_takes_the_access_away(scim, scim_on, workspace, as_token):
    user = create(scim)
    account = User.objects.get(email="bjensen@example.com")
    token = as_token(account, scopes=["read"], workspace=workspace)
    assert send(scim, "delete", f"/Users/{user['id']}").status_code == 204
    assert token.get("/v1/orgs/acme/projects").status_code == 401
    assert not Membership.objects.filter(user=account).exists() and User.objects.filter(pk=account.pk).exists()
    scim_error(send(scim, "get", f"/Users/{user['id']}"), 404)
    scim_error(send(scim, "delete", f"/Users/{user['id']}"), 404)


@pytest.mark.parametrize("remove", ["deactivate", "delete"])
def test_scim_never_removes_an_owner_even_with_another_owner_left(scim, scim_on, workspace, alice, remove):
    """Only an owner removes an owner (REST); the directory's token is no way around it: an owner is made another
    role first, by an owner, and then the directory can deactivate them."""
    second = UserFactory(email="olga@example.com")
    MembershipFactory(workspace=workspace, user=second, role="owner")
    user = create(scim, {"schemas": [USER], "userName": "olga@example.com"})
    if remove == "deactivate":
        refused = send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
            {"op": "replace", "path": "active", "value": False}]})
    else:
        refused = send(scim, "delete", f"/Users/{user['id']}")
    assert "owner" in scim_error(refused, 403)["detail"]
    assert Membership.objects.get(workspace=workspace, user=second).role == "owner"
    assert ScimUser.objects.get().active is True

    Membership.objects.filter(workspace=workspace, user=second).update(role="admin")  # an owner demoted them
    assert send(scim, "delete", f"/Users/{user['id']}").status_code == 204
    assert not Membership.objects.filter(workspace=workspace, user=second).exists()


def test_only_an_owner_creates_or_replaces_the_scim_token(workspace, alice, as_user):
    """The token acts for the whole directory: an admin may not mint one (API and dashboard alike)."""
    from platform_app.models import WorkspaceSso
    from tests.platform_app.org.test_pages import browser

    admin = UserFactory(email="adam@example.com")
    MembershipFactory(workspace=workspace, user=admin, role="admin")
    refused = as_user(admin).post("/v1/orgs/acme/sso/scim-token")
    assert refused.status_code == 403 and "owner" in refused.json()["message"], refused.json()
    assert browser(admin).post("/dashboard/acme/sso/scim-token").status_code == 403
    assert not WorkspaceSso.objects.filter(scim_enabled=True).exists()
    page = browser(admin).get("/dashboard/acme/sso/").content.decode()
    assert "Create a SCIM token" not in page and "Only an owner" in page
    assert as_user(alice).post("/v1/orgs/acme/sso/scim-token").status_code == 201


def test_groups_named_like_roles_give_roles(scim, scim_on, workspace):
    babs = create(scim)
    jsmith = create(scim, {"schemas": [USER], "userName": "jsmith", "emails": [{"value": "jsmith@example.com"}]})
    resp = send(scim, "post", "/Groups", {"schemas": [GROUP], "displayName": "Developer",
                                          "members": [{"value": babs["id"]}]})
    assert resp.status_code == 201 and resp["Location"].endswith(f"/Groups/{resp.json()['id']}")
    group = resp.json()
    assert [m["value"] for m in group["members"]] == [babs["id"]]

    def role(name):
        return Membership.objects.get(workspace=workspace, user__email=f"{name}@example.com").role

    assert (role("bjensen"), role("jsmith")) == ("developer", "viewer")
    # RFC 7644 3.5.2.1: add members
    add = {"schemas": [PATCH], "Operations": [{"op": "add", "path": "members", "value": [
        {"display": "jsmith", "$ref": f"https://example.com/v2/Users/{jsmith['id']}", "value": jsmith["id"]}]}]}
    assert send(scim, "patch", f"/Groups/{group['id']}", add).status_code == 200
    assert role("jsmith") == "developer"
    assert [g["display"] for g in send(scim, "get", f"/Users/{jsmith['id']}").json()["groups"]] == ["Developer"]
    # an admin group wins over developer
    admins = send(scim, "post", "/Groups", {"schemas": [GROUP], "displayName": "admin",
                                            "members": [{"value": jsmith["id"]}]}).json()
    assert role("jsmith") == "admin"
    # RFC 7644 3.5.2.2: remove one member
    remove = {"schemas": [PATCH], "Operations": [{"op": "remove", "path": f'members[value eq "{jsmith["id"]}"]'}]}
    assert send(scim, "patch", f"/Groups/{admins['id']}", remove).status_code == 200
    assert role("jsmith") == "developer"
    # no role group left: the default role
    assert send(scim, "delete", f"/Groups/{group['id']}").status_code == 204
    assert (role("bjensen"), role("jsmith")) == ("viewer", "viewer")
    assert not ScimGroup.objects.filter(pk=group["id"]).exists()


def test_a_member_who_joined_otherwise_keeps_their_role_until_a_role_group_names_them(scim, scim_on, workspace):
    dana = UserFactory(email="dana@example.com")
    MembershipFactory(workspace=workspace, user=dana, role="admin")
    created = create(scim, {"schemas": [USER], "userName": "dana@example.com"})
    assert Membership.objects.get(user=dana).role == "admin"
    send(scim, "post", "/Groups", {"schemas": [GROUP], "displayName": "billing", "members": [{"value": created["id"]}]})
    assert Membership.objects.get(user=dana).role == "billing"


def test_group_filter_rename_replace_and_uniqueness(scim, scim_on):
    babs = create(scim)
    group = send(scim, "post", "/Groups", {"schemas": [GROUP], "displayName": "Ops"}).json()
    scim_error(send(scim, "post", "/Groups", {"schemas": [GROUP], "displayName": "ops"}), 409, "uniqueness")
    assert send(scim, "get", '/Groups?filter=displayName eq "OPS"').json()["totalResults"] == 1
    renamed = send(scim, "patch", f"/Groups/{group['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "value": {"displayName": "Platform Ops"}}]})
    assert renamed.json()["displayName"] == "Platform Ops"
    replaced = send(scim, "put", f"/Groups/{group['id']}", {"schemas": [GROUP], "displayName": "Ops",
                                                           "members": [{"value": babs["id"]}]})
    assert replaced.status_code == 200 and len(replaced.json()["members"]) == 1
    scim_error(send(scim, "put", f"/Groups/{group['id']}", {"schemas": [GROUP], "displayName": "Ops",
                                                           "members": [{"value": "scu_unknown"}]}), 400,
               "invalidValue")


@pytest.mark.parametrize("header", [None, "Bearer scim_wrong", "Bearer svc_notascimtoken", "Basic abc"])
def test_a_wrong_token_is_401_in_scims_error_schema(scim_on, header, api):
    if header:
        api.credentials(HTTP_AUTHORIZATION=header)
    for method, path in (("get", "/Users"), ("post", "/Users"), ("get", "/ServiceProviderConfig"),
                         ("get", "/Nowhere")):
        resp = send(api, method, path, BJENSEN if method == "post" else None)
        scim_error(resp, 401)
        assert resp["WWW-Authenticate"].startswith("Bearer")
    assert not ScimUser.objects.exists()


def test_a_disabled_scim_or_another_workspaces_resources(scim, scim_on, charlie):
    other = WorkspaceSsoFactory(workspace=charlie.workspaces.get(), enabled=False, scim_raw="scim_" + "c" * 43)
    theirs = create(bearer("scim_" + "c" * 43), {"schemas": [USER], "userName": "x@example.com"})
    scim_error(send(scim, "get", f"/Users/{theirs['id']}"), 404)
    assert send(scim, "get", "/Users").json()["totalResults"] == 0
    other.scim_enabled = False
    other.save()
    scim_error(send(bearer("scim_" + "c" * 43), "get", "/Users"), 401)


@pytest.mark.parametrize("body, scim_type", [
    ({"schemas": [USER]}, "invalidValue"),
    ({"schemas": [USER], "userName": "nomail"}, "invalidValue"),
    ({"schemas": [GROUP], "userName": "x@example.com"}, "invalidSyntax"),
    ({"schemas": [USER], "userName": "x@example.com", "emails": [{"value": "not-an-address"}]}, "invalidValue"),
    ({"schemas": [USER], "userName": "x@example.com", "active": "maybe"}, "invalidValue"),
    ({"schemas": [USER], "userName": "x@elsewhere.example"}, "invalidValue"),
    ([1, 2], "invalidSyntax"),
])
def test_bad_users_are_400_in_scims_schema_and_write_nothing(scim, scim_on, body, scim_type):
    scim_on.allowed_domains = ["example.com"]
    scim_on.save()
    scim_error(send(scim, "post", "/Users", body), 400, scim_type)
    assert not ScimUser.objects.exists() and not User.objects.filter(email__startswith="x@").exists()


def test_malformed_json_is_invalid_syntax(scim, scim_on):
    resp = scim.post("/scim/v2/Users", data="{not json", content_type=SCIM_JSON)
    scim_error(resp, 400, "invalidSyntax")


def test_discovery_documents(scim, scim_on):
    config = send(scim, "get", "/ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["bulk"]["supported"] is False
    assert config["filter"] == {"supported": True, "maxResults": 200}
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    schemas = send(scim, "get", "/Schemas").json()
    assert {s["id"] for s in schemas["Resources"]} == {USER, GROUP} and schemas["totalResults"] == 2
    user_schema = send(scim, "get", f"/Schemas/{USER}").json()
    assert next(a for a in user_schema["attributes"] if a["name"] == "userName")["uniqueness"] == "server"
    types = send(scim, "get", "/ResourceTypes").json()["Resources"]
    assert {(t["name"], t["endpoint"]) for t in types} == {("User", "/Users"), ("Group", "/Groups")}
    assert send(scim, "get", "/ResourceTypes/Group").json()["schema"] == GROUP
    scim_error(send(scim, "get", "/ResourceTypes/Device"), 404)
    scim_error(send(scim, "get", "/Bulk"), 404)
    scim_error(send(scim, "put", "/Users"), 405)
    assert scim.get("/scim/v2/Users", HTTP_ACCEPT="application/json")["Content-Type"].startswith("application/json")


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_of_one_user_name_make_one_user(workspace, alice):
    WorkspaceSsoFactory(workspace=workspace, enabled=False, issuer="", scim_raw=SCIM_TOKEN)

    def make(n):
        return lambda: send(bearer(SCIM_TOKEN), "post", "/Users", {
            "schemas": [USER], "userName": "racer", "emails": [{"value": f"racer{n}@example.com"}]}).status_code

    statuses = all_at_once([make(1), make(2), make(3)])
    assert sorted(statuses) == [201, 409, 409]
    assert ScimUser.objects.filter(user_name="racer").count() == 1
    assert Membership.objects.filter(workspace=workspace).count() == 2  # alice and the one racer


# An account's address ----------------------------------------------------------------------------

def test_an_address_scim_changes_is_unverified_until_its_link_is_opened(sso_on, workspace_idp, workspace, alice,
                                                                         api, django_capture_on_commit_callbacks):
    """A directory cannot hand its account a verified address it never proved: the change clears verification,
    and the new address's owner is mailed the link."""
    from django.core import mail

    from platform_app.services.org.sso import scim_token_rotate
    from tests.platform_app.identity.test_email_verification import link_token
    from tests.platform_app.org.conftest import sso_sign_in

    directory = bearer(scim_token_rotate(workspace=workspace, actor=alice))
    body = {**BJENSEN, "userName": "m1@example.com", "emails": [{"value": "m1@example.com", "primary": True}]}
    user = json.loads(send(directory, "post", "/Users", body).content)
    signed_in = sso_sign_in(api, workspace_idp, email="m1@example.com", sub="m1")
    assert signed_in.status_code == 200, signed_in.json()
    me = bearer(signed_in.json()["accessToken"])
    with django_capture_on_commit_callbacks(execute=True):
        assert me.post("/v1/auth/email/verification").status_code == 202
    assert [m.to for m in mail.outbox] == [["m1@example.com"]]
    assert api.post("/v1/auth/email/verify", {"token": link_token(mail.outbox[0])}, format="json").status_code == 200
    assert me.get("/v1/auth/me").json()["user"]["emailVerified"] is True

    with django_capture_on_commit_callbacks(execute=True):
        changed = send(directory, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
            {"op": "replace", "path": "emails", "value": [{"value": "newhire@example.com", "primary": True}]},
            {"op": "replace", "path": "userName", "value": "newhire@example.com"}]})
    assert changed.status_code == 200, changed.content
    shown = me.get("/v1/auth/me").json()["user"]
    assert shown["email"] == "newhire@example.com" and shown["emailVerified"] is False
    assert mail.outbox[-1].to == ["newhire@example.com"]
    # the new address's owner verifies it with the link mailed to it, and only then
    assert api.post("/v1/auth/email/verify", {"token": link_token(mail.outbox[-1])}, format="json").status_code == 200
    assert me.get("/v1/auth/me").json()["user"]["emailVerified"] is True


@pytest.mark.parametrize("use", ["password", "other_workspace", "password_session"])
def test_scim_does_not_move_the_address_of_an_account_used_elsewhere(scim, scim_on, use):
    from platform_app.services.identity.auth import session_start
    from tests.factories import WorkspaceFactory

    user = create(scim)
    account = User.objects.get(email="bjensen@example.com")
    if use == "password":
        account.set_password("a-long-password-1")
        account.save()
    elif use == "other_workspace":
        MembershipFactory(workspace=WorkspaceFactory(), user=account, role="viewer")
    else:
        session_start(user=account)
    refused = send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "emails", "value": [{"value": "newhire@example.com", "primary": True}]}]})
    assert refused.status_code == 409 and json.loads(refused.content)["scimType"] == "mutability"
    account.refresh_from_db()
    assert account.email == "bjensen@example.com"


def test_an_admin_changing_an_address_clears_its_verification(staff, dana, django_capture_on_commit_callbacks):
    from django.core import mail
    from django.test import Client
    from django.utils import timezone

    User.objects.filter(pk=dana.pk).update(email_verified_at=timezone.now())
    browser = Client()
    browser.force_login(staff)
    page = browser.get(f"/admin/platform_app/user/{quote(dana.pk)}/change/")
    assert page.status_code == 200
    form = {k: v for k, v in page.context["adminform"].form.initial.items() if v is not None and k != "password"}
    form.update(email="dana.new@example.com", name="Dana")
    with django_capture_on_commit_callbacks(execute=True):
        saved = browser.post(f"/admin/platform_app/user/{quote(dana.pk)}/change/", {
            **{k: v for k, v in form.items() if isinstance(v, str)}, "email": "dana.new@example.com",
            "is_active": "on", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"})
    dana.refresh_from_db()
    assert dana.email == "dana.new@example.com" and dana.email_verified_at is None, saved.content[:2000]
    assert mail.outbox and mail.outbox[-1].to == ["dana.new@example.com"]


def test_a_linked_member_keeps_their_own_address(scim, scim_on, workspace):
    dana = UserFactory(email="dana@example.com")
    MembershipFactory(workspace=workspace, user=dana, role="developer")
    created = create(scim, {"schemas": [USER], "userName": "dana@example.com"})
    send(scim, "patch", f"/Users/{created['id']}", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
         "Operations": [{"op": "replace", "path": "emails", "value": [{"value": "other@example.com"}]}]})
    dana.refresh_from_db()
    assert dana.email == "dana@example.com"


def test_a_user_the_directory_removed_cannot_rejoin_through_an_invitation(scim, scim_on, workspace, alice, as_user):
    """Deprovisioning revokes the account's pending invitations to the workspace, and accepting one made later
    checks the SCIM record: deactivated in the directory, it is 403 and no membership."""
    from platform_app.models import Invitation
    from platform_app.services.identity.email_verification import email_mark_verified
    from tests.platform_app.teams.factories import InvitationFactory

    user = create(scim)
    account = User.objects.get(email="bjensen@example.com")
    email_mark_verified(user=account)  # invitations are for verified addresses
    pending = InvitationFactory(workspace=workspace, email="BJensen@example.com", role="admin")
    deactivate = {"schemas": [PATCH], "Operations": [{"op": "replace", "path": "active", "value": False}]}
    assert send(scim, "patch", f"/Users/{user['id']}", deactivate).status_code == 200
    pending.refresh_from_db()
    assert pending.status == Invitation.Status.REVOKED

    later = InvitationFactory(workspace=workspace, email="bjensen@example.com", role="admin", raw="later-invite-token")
    resp = as_user(account).post("/v1/invitations/later-invite-token/accept")
    assert resp.status_code == 403 and resp.json()["code"] == "scim_deprovisioned", resp.json()
    assert not Membership.objects.filter(workspace=workspace, user=account).exists()
    later.refresh_from_db()
    assert later.status == Invitation.Status.PENDING


def test_attributes_and_excluded_attributes_shape_users_and_groups(scim, scim_on):
    """RFC 7644 3.9: `attributes` returns only those (with `id` and `schemas`), `excludedAttributes` leaves them out,
    on lists, single resources and writes alike; names compare case-insensitively, with or without the URN."""
    user = create(scim)
    group = send(scim, "post", "/Groups", {"schemas": [GROUP], "displayName": "developer",
                                           "members": [{"value": user["id"]}]}).json()

    excluded = send(scim, "get", f"/Users/{user['id']}?excludedAttributes=name,emails").json()
    assert "name" not in excluded and "emails" not in excluded and excluded["userName"] == "bjensen"
    listed = send(scim, "get", "/Users?excludedAttributes=NAME").json()["Resources"][0]
    assert "name" not in listed and listed["id"] == user["id"]

    only = send(scim, "get", f"/Users?attributes=userName,{USER}:name.givenName").json()["Resources"][0]
    assert only == {"schemas": [USER], "id": user["id"], "userName": "bjensen", "name": {"givenName": "Barbara"}}
    sub = send(scim, "get", f"/Users/{user['id']}?excludedAttributes=emails.type,meta").json()
    assert sub["emails"] == [{"value": "bjensen@example.com", "primary": True}] and "meta" not in sub

    members = send(scim, "get", f"/Groups/{group['id']}?attributes=members.value").json()
    assert members == {"schemas": [GROUP], "id": group["id"], "members": [{"value": user["id"]}]}
    assert "members" not in send(scim, "get", "/Groups?excludedAttributes=members").json()["Resources"][0]
    made = send(scim, "post", "/Users?attributes=userName", {"schemas": [USER], "userName": "z@example.com"})
    assert made.status_code == 201 and made.json() == {"schemas": [USER], "id": made.json()["id"],
                                                       "userName": "z@example.com"}
    assert made["Location"].endswith(f"/scim/v2/Users/{made.json()['id']}")


def test_a_patch_removing_name_leaves_no_name(scim, scim_on):
    user = create(scim)
    removed = send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": "name"}]})
    assert removed.status_code == 200 and "name" not in removed.json(), removed.json()
    fetched = send(scim, "get", f"/Users/{user['id']}").json()
    assert "name" not in fetched and "displayName" not in fetched
    stored = ScimUser.objects.get()
    assert (stored.given_name, stored.family_name) == ("", "")


def test_search_by_post_is_the_list_with_its_parameters_in_the_body(scim, scim_on):
    create(scim)
    create(scim, {"schemas": [USER], "userName": "jsmith", "emails": [{"value": "jsmith@example.com"}]})
    search = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
    found = send(scim, "post", "/Users/.search", {"schemas": [search], "filter": 'userName eq "jsmith"',
                                                  "attributes": ["userName"], "count": 5})
    assert found.status_code == 200, found.json()
    assert found.json()["totalResults"] == 1 and found.json()["Resources"][0]["userName"] == "jsmith"
    assert set(found.json()["Resources"][0]) == {"schemas", "id", "userName"}
    assert send(scim, "post", "/Groups/.search", {"schemas": [search]}).json()["totalResults"] == 0
    scim_error(send(scim, "post", "/Users/.search", {"schemas": [search], "attributes": "userName"}), 400,
               "invalidValue")
    scim_error(send(scim, "post", "/.search", {"schemas": [search]}), 501)


def test_an_added_primary_email_is_the_only_primary_and_removing_emails_keeps_the_address(scim, scim_on):
    user = create(scim)
    added = send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "add", "path": "emails", "value": [{"value": "babs@example.com", "primary": True}]}]}).json()
    assert [(e["value"], e["primary"]) for e in added["emails"]] == [("bjensen@example.com", False),
                                                                     ("babs@example.com", True)]
    assert User.objects.filter(email="babs@example.com").exists()  # the primary is the account's address
    removed = send(scim, "patch", f"/Users/{user['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": "emails"}]})
    assert removed.status_code == 200 and removed.json()["emails"] == []
    assert User.objects.filter(email="babs@example.com").exists()
