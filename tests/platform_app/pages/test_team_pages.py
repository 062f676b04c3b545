"""Workspace pages: dashboard and new workspace, projects list, settings, members, invitations, tokens, audit."""
import re

import pytest
from django.core import mail
from django.test import Client

from platform_app.models import ApiToken, AuditEvent, Invitation, Membership, Workspace
from tests.factories import UserFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.pages.conftest import sign_in

pytestmark = pytest.mark.django_db


def test_create_a_workspace_from_the_dashboard(owner, alice):
    assert b"Acme" in owner.get("/dashboard/").content
    resp = owner.post("/dashboard/", {"name": "Second Team", "slug": ""})
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/second-team/"
    workspace = Workspace.objects.get(slug="second-team")
    assert Membership.objects.get(workspace=workspace).user == alice
    bad = owner.post("/dashboard/", {"name": "Third", "slug": "acme"})
    assert bad.status_code == 400 and b"taken" in bad.content
    assert owner.post("/dashboard/", {"name": ""}).status_code == 400
    assert Workspace.objects.count() == 2


def test_projects_list_shows_address_and_last_deployment(owner, project, settings):
    settings.DEPLOY_PORT = "8123"
    DeploymentFactory(project=project, status="error", branch="old", commit_sha="aaaaaaa1")
    last = DeploymentFactory(project=project, status="ready", branch="main", commit_sha="abcdef1234")
    project.production_deployment = last
    project.save()
    page = owner.get("/dashboard/acme/").content.decode()
    assert 'href="/dashboard/acme/projects/site/"' in page
    assert "http://site.localhost:8123/" in page
    assert "badge-ready" in page and "abcdef1" in page and "badge-error" not in page
    assert project.git_url not in page  # never the raw Git URL


def test_project_rows_escape_names_and_say_what_is_missing(owner, project, workspace):
    """Each row: the name (escaped) and framework, the address or "not deployed yet", the last deployment or "No
    deployments"."""
    from tests.platform_app.projects.factories import ProjectFactory

    project.name, project.framework = '<b>Shop</b> & "co"', "nextjs"
    project.save()
    DeploymentFactory(project=project, status="building", env="preview", branch="<i>feat</i>", commit_sha="")
    ProjectFactory(workspace=workspace, slug="empty", name="Empty")
    page = owner.get("/dashboard/acme/").content.decode()
    assert "<strong>&lt;b&gt;Shop&lt;/b&gt; &amp; &quot;co&quot;</strong>" in page and "<b>Shop" not in page
    assert '<span class="muted">nextjs</span>' in page and page.count("not deployed yet") == 2
    assert '<span class="badge badge-building">building</span></a> <span class="muted">preview</span>' in page
    assert "<td>&lt;i&gt;feat&lt;/i&gt;</td><td><code>—</code></td>" in page
    assert re.search(r'<td><time datetime="[0-9T:.+-]+" data-ago>\d{4}-\d\d-\d\d \d\d:\d\d UTC</time></td>', page)
    assert 'href="/dashboard/acme/projects/empty/"' in page
    assert '<td colspan="4" class="muted">No deployments</td>' in page


def test_viewer_sees_no_new_project_button_and_cannot_create(viewer):
    page = viewer.get("/dashboard/acme/").content
    assert b"New project" not in page
    assert viewer.post("/dashboard/acme/new/", {"action": "template", "t-name": "x", "t-template": "static-site"}
                       ).status_code == 403


def test_outsider_gets_404(charlie, workspace):
    client = sign_in(charlie)
    for path in ("/dashboard/acme/", "/dashboard/acme/settings/", "/dashboard/acme/tokens/", "/dashboard/acme/audit/"):
        assert client.get(path).status_code == 404


def test_invite_accept_and_change_role_then_remove(owner, workspace, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = owner.post("/dashboard/acme/settings/", {"action": "invite", "email": "dan@example.com",
                                                        "role": "viewer"})
    assert resp.status_code == 302
    invitation = Invitation.objects.get(email="dan@example.com")
    token = re.search(r"/invitations/(\S+)", mail.outbox[-1].body).group(1)
    dan = UserFactory(email="dan@example.com")
    client = sign_in(dan)
    assert b"as <strong>viewer</strong>" in client.get(f"/invitations/{token}").content
    assert client.post(f"/invitations/{token}", {"answer": "accept"}).status_code == 302
    invitation.refresh_from_db()
    membership = Membership.objects.get(workspace=workspace, user=dan)
    assert invitation.status == "accepted" and membership.role == "viewer"
    # someone else's link tells nothing
    assert sign_in(UserFactory()).get(f"/invitations/{token}").status_code == 404

    assert owner.post(f"/dashboard/acme/members/{membership.pk}", {"role": "developer"}).status_code == 302
    membership.refresh_from_db()
    assert membership.role == "developer"
    assert owner.post(f"/dashboard/acme/members/{membership.pk}", {"role": "emperor"}).status_code == 400
    assert owner.post(f"/dashboard/acme/members/{membership.pk}", {"remove": "1"}).status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_developer_cannot_manage_members_or_rename(developer, alice, workspace):
    page = developer.get("/dashboard/acme/settings/").content
    assert b"Send invitation" not in page and b"Change role" not in page
    owner_membership = Membership.objects.get(user=alice)
    assert developer.post(f"/dashboard/acme/members/{owner_membership.pk}", {"remove": "1"}).status_code == 403
    assert developer.post("/dashboard/acme/settings/", {"action": "rename", "name": "Mine"}).status_code == 403
    workspace.refresh_from_db()
    assert workspace.name == "Acme" and Membership.objects.filter(pk=owner_membership.pk).exists()


def test_last_owner_cannot_be_removed(owner, alice):
    mine = Membership.objects.get(user=alice)
    resp = owner.post(f"/dashboard/acme/members/{mine.pk}", {"remove": "1"})
    assert resp.status_code == 409
    assert Membership.objects.filter(pk=mine.pk).exists()


def test_create_and_revoke_a_token_from_the_page(owner, workspace):
    resp = owner.post("/dashboard/acme/tokens/", {"name": "laptop", "scopes": ["read", "deploy"], "expires": "30d"})
    assert resp.status_code == 200 and b"will not be shown again" in resp.content
    token = ApiToken.objects.get()
    assert token.workspace == workspace and token.scopes == ["read", "deploy"]
    bad = owner.post("/dashboard/acme/tokens/", {"name": "x", "scopes": ["read"], "expires": "soon"})
    assert bad.status_code == 400 and ApiToken.objects.count() == 1
    assert owner.post(f"/dashboard/acme/tokens/{token.pk}/revoke").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(action="api_token.revoked", target_id=token.pk).exists()


def test_audit_log_lists_and_filters(owner, alice):
    owner.post("/dashboard/acme/settings/", {"action": "rename", "name": "Acme Inc", "slug": "acme"})
    page = owner.get("/dashboard/acme/audit/", {"action": "workspace."}).content
    assert b"workspace.updated" in page
    assert b"workspace.updated" not in owner.get("/dashboard/acme/audit/", {"action": "member."}).content


def test_signed_out_pages_redirect_to_sign_in():
    for path in ("/dashboard/acme/", "/dashboard/acme/new/", "/dashboard/account/", "/invitations/x"):
        resp = Client().get(path)
        assert resp.status_code == 302 and resp["Location"].startswith("/dashboard/login/")


def test_workspace_switcher_goes_to_a_workspace_of_the_member_only(owner, charlie):
    owner.post("/dashboard/", {"name": "Other"})
    page = owner.get("/dashboard/acme/").content.decode()
    assert '<option value="other"' in page and '<option value="acme" selected' in page
    resp = owner.get("/dashboard/switch/", {"to": "other"})
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/other/"
    assert owner.get("/dashboard/switch/", {"to": "charlies"}).status_code == 404


def test_sign_up_from_an_invitation_link_comes_back_to_it(db):
    resp = Client().get("/invitations/sometoken")
    assert resp["Location"] == "/dashboard/login/?next=/invitations/sometoken"
    page = Client().get("/dashboard/signup/", {"next": "/invitations/sometoken"}).content.decode()
    assert 'name="next" value="/invitations/sometoken"' in page
    resp = Client().post("/dashboard/signup/?next=/invitations/sometoken",
                         {"email": "new@example.com", "password": "a-long-enough-passphrase"})
    assert resp.status_code == 302 and resp["Location"] == "/invitations/sometoken"
    resp = Client().post("/dashboard/signup/?next=//evil.example/", {"email": "n2@example.com",
                                                                      "password": "a-long-enough-passphrase"})
    assert resp["Location"] == "/dashboard/"


def test_token_form_offers_only_the_scopes_of_the_role(viewer):
    page = viewer.get("/dashboard/acme/tokens/").content.decode()
    assert 'value="read"' in page and 'value="admin"' not in page and 'value="deploy"' not in page
    resp = viewer.post("/dashboard/acme/tokens/", {"name": "ci", "scopes": ["deploy"], "expires": "1d"})
    assert resp.status_code == 400 and not ApiToken.objects.exists()
    resp = viewer.post("/dashboard/acme/tokens/", {"name": "ci", "scopes": ["read"], "expires": "1d"})
    assert resp.status_code == 200
    assert ApiToken.objects.get().scopes == ["read"]


def test_projects_table_refreshes_itself_while_a_build_runs(owner, project):
    DeploymentFactory(project=project, status="queued")
    assert 'hx-trigger="every 5s"' in owner.get("/dashboard/acme/").content.decode()
    fragment = owner.get("/dashboard/acme/", headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment and 'id="projects"' in fragment and "badge-queued" in fragment
