"""Domains through the HTTP API: adding (host names, IDN, the platform's own names, names taken), changing,
removing, the workspace list, the verification targets, and who may do what."""
import pytest

from platform_app.models import AuditEvent, Domain
from tests.platform_app.domains.factories import DomainFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def test_add_lists_the_records_to_create(alice_client, url, project, zone):
    resp = alice_client.post(url, {"name": "WWW.Example.COM."}, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    domain = Domain.objects.get()
    assert body["id"] == domain.pk and body["name"] == "www.example.com" == domain.name
    assert body["projectId"] == project.pk
    assert (body["status"], body["verified"], body["primary"]) == ("pending", False, False)
    assert (body["redirectTo"], body["gitBranch"], body["lastCheck"]) == (None, None, None)
    assert body["verification"] == [
        {"type": "TXT", "name": "_svc-challenge.www.example.com", "value": domain.verification_token},
        {"type": "CNAME", "name": "www.example.com", "value": "cname.localhost"},
        {"type": "A", "name": "www.example.com", "value": "203.0.113.10"},
        {"type": "AAAA", "name": "www.example.com", "value": "2001:db8::10"},
    ]
    assert len(domain.verification_token) == 32
    assert AuditEvent.objects.filter(action="domain.added", target_id=domain.pk).count() == 1
    listed = alice_client.get(url).json()
    assert [d["name"] for d in listed["items"]] == ["www.example.com"] and listed["nextCursor"] is None


def test_international_names_are_stored_as_punycode(alice_client, url):
    resp = alice_client.post(url, {"name": "Bücher.Example"}, format="json")
    assert resp.status_code == 201
    assert resp.json()["name"] == "xn--bcher-kva.example" == Domain.objects.get().name
    # the same name written either way is the same domain
    again = alice_client.post(url, {"name": "xn--bcher-kva.example"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "domain_taken"


@pytest.mark.parametrize("name", ["localhost", "example", "203.0.113.7", "https://www.example.com",
                                  "www.example.com:8443", "*.example.com", "-bad.example.com", "a..example.com",
                                  "under_score.example.com", "www.example.com/path", "a" * 64 + ".example.com",
                                  "", "   ", "xn--zz.example"])
def test_what_is_not_a_host_name_is_400(alice_client, url, name):
    resp = alice_client.post(url, {"name": name}, format="json")
    assert resp.status_code == 400, resp.json()
    assert resp.json()["code"] == "validation_error" and "name" in resp.json()["details"]
    assert not Domain.objects.exists()


@pytest.mark.parametrize("body", [{}, {"name": 7}, {"name": "www.example.com", "colour": "red"},
                                  {"name": "www.example.com", "gitBranch": ["main"]}])
def test_malformed_bodies_are_400(alice_client, url, body):
    resp = alice_client.post(url, body, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "validation_error"
    assert not Domain.objects.exists()


@pytest.mark.parametrize("name", ["Platform.Example.NET.", "shop.platform.example.net", "a.b.platform.example.net",
                                  "shop.localhost"])
def test_the_platform_domain_and_its_subdomains_are_400(alice_client, url, name, settings):
    settings.DOMAINS_RESERVED = ["localhost", "platform.example.net"]
    resp = alice_client.post(url, {"name": name}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "domain_reserved"
    assert "name" in resp.json()["details"]
    assert not Domain.objects.exists()
    # a name that merely ends the same way is someone else's
    assert alice_client.post(url, {"name": "myplatform.example.net"}, format="json").status_code == 201


def test_by_default_the_deploy_domain_and_site_host_are_reserved(settings):
    from config.settings.domains import DOMAINS_RESERVED

    assert settings.DEPLOY_DOMAIN in DOMAINS_RESERVED


@pytest.mark.parametrize("status", ["verified", "misconfigured"])
def test_a_name_another_project_holds_is_409(alice_client, url, charlie, status):
    other = ProjectFactory(workspace=charlie.memberships.get().workspace, slug="theirs")
    DomainFactory(project=other, name="www.example.com", status=status)
    resp = alice_client.post(url, {"name": "www.EXAMPLE.com"}, format="json")
    assert resp.status_code == 409
    assert resp.json()["code"] == "domain_taken"
    assert Domain.objects.get().project == other  # theirs, untouched


def test_redirect_and_branch_are_set_and_checked(alice_client, url, project):
    alice_client.post(url, {"name": "example.com"}, format="json")
    resp = alice_client.post(url, {"name": "www.example.com", "redirectTo": "Example.com", "gitBranch": "main"},
                             format="json")
    assert resp.status_code == 201
    assert resp.json()["redirectTo"] == "example.com" and resp.json()["gitBranch"] == "main"
    www = Domain.objects.get(name="www.example.com")
    # not a domain of this project, itself, a chain: 400, nothing changed
    for target in ("elsewhere.example.org", "www.example.com"):
        bad = alice_client.patch(f"{url}/{www.pk}", {"redirectTo": target}, format="json")
        assert bad.status_code == 400 and "redirectTo" in bad.json()["details"]
    apex = Domain.objects.get(name="example.com")
    chain = alice_client.patch(f"{url}/{apex.pk}", {"redirectTo": "www.example.com"}, format="json")
    assert chain.status_code == 400
    assert Domain.objects.get(pk=apex.pk).redirect_to == ""
    cleared = alice_client.patch(f"{url}/{www.pk}", {"redirectTo": None, "gitBranch": "feature/x"}, format="json")
    assert cleared.status_code == 200
    assert (cleared.json()["redirectTo"], cleared.json()["gitBranch"]) == (None, "feature/x")
    www.refresh_from_db()
    assert (www.redirect_to, www.git_branch) == ("", "feature/x")


def test_remove_and_unknown_ids(alice_client, url, project):
    created = alice_client.post(url, {"name": "example.com"}, format="json").json()
    alice_client.post(url, {"name": "www.example.com", "redirectTo": "example.com"}, format="json")
    assert alice_client.delete(f"{url}/dom_nope").status_code == 404
    resp = alice_client.delete(f"{url}/{created['id']}")
    assert resp.status_code == 200 and resp.json() == {"deleted": True}
    assert list(Domain.objects.values_list("name", "redirect_to")) == [("www.example.com", "")]
    assert AuditEvent.objects.filter(action="domain.removed").count() == 1
    assert alice_client.post(f"{url}/{created['id']}/verify", {}, format="json").status_code == 404


def test_another_workspaces_domain_is_404(alice_client, url, charlie):
    theirs = DomainFactory(project=ProjectFactory(workspace=charlie.memberships.get().workspace))
    for method, path in (("delete", ""), ("patch", ""), ("post", "/verify"), ("post", "/primary")):
        resp = getattr(alice_client, method)(f"{url}/{theirs.pk}{path}", {}, format="json")
        assert resp.status_code == 404
    assert Domain.objects.filter(pk=theirs.pk).exists()


def test_the_workspace_list_has_every_projects_domains(alice_client, project, workspace, charlie):
    DomainFactory(project=project, name="a.example.com", status="verified")
    DomainFactory(project=ProjectFactory(workspace=workspace, slug="blog"), name="b.example.com")
    DomainFactory(project=ProjectFactory(workspace=charlie.memberships.get().workspace), name="c.example.com")
    resp = alice_client.get("/v1/orgs/acme/domains?limit=1")
    assert resp.status_code == 200
    page = resp.json()
    assert len(page["items"]) == 1 and page["nextCursor"]
    rest = alice_client.get(f"/v1/orgs/acme/domains?cursor={page['nextCursor']}").json()
    names = {d["name"]: d["status"] for d in page["items"] + rest["items"]}
    assert names == {"a.example.com": "verified", "b.example.com": "pending"}
    assert alice_client.get("/v1/orgs/acme/domains?limit=0").status_code == 400
    verified = alice_client.get("/v1/orgs/acme/domains?status=verified").json()["items"]
    assert [d["name"] for d in verified] == ["a.example.com"]
    bad = alice_client.get("/v1/orgs/acme/domains?status=broken")
    assert bad.status_code == 400 and "status" in bad.json()["details"]


def test_verification_targets(alice, as_token, settings):
    settings.DOMAINS_TXT_PREFIX, settings.DOMAINS_CNAME_TARGET = "svc", "cname.platform.example"
    settings.DOMAINS_A_RECORDS, settings.DOMAINS_AAAA_RECORDS = ["203.0.113.1", "203.0.113.2"], []
    resp = as_token(alice, scopes=["read"]).get("/v1/platform/verification-targets")
    assert resp.status_code == 200
    assert resp.json() == {"txtPrefix": "svc", "cname": "cname.platform.example", "a": ["203.0.113.1", "203.0.113.2"],
                           "aaaa": []}
    assert as_token(alice, scopes=["env:read"]).get("/v1/platform/verification-targets").status_code == 403


@pytest.mark.parametrize("scope, can_read, can_change", [
    ("read", True, False), ("deploy", True, False), ("env:write", True, False), ("domains", True, True),
    ("admin", True, True), ("env:read", False, False),
])
def test_scopes(alice, as_token, workspace, url, project, scope, can_read, can_change):
    existing = DomainFactory(project=project, name="old.example.com")
    client = as_token(alice, scopes=[scope], workspace=workspace)
    assert client.get(url).status_code == (200 if can_read else 403)
    assert client.get("/v1/orgs/acme/domains").status_code == (200 if can_read else 403)
    added = client.post(url, {"name": "new.example.com"}, format="json")
    assert added.status_code == (201 if can_change else 403)
    if not can_change:
        assert added.json()["details"]["requiredScope"] == "domains"
    removed = client.delete(f"{url}/{existing.pk}")
    assert removed.status_code == (200 if can_change else 403)
    assert Domain.objects.filter(name="new.example.com").exists() == can_change
    assert Domain.objects.filter(pk=existing.pk).exists() != can_change


@pytest.mark.parametrize("role, allowed", [("developer", True), ("viewer", False), ("billing", False)])
def test_roles(workspace, as_user, url, role, allowed):
    from tests.factories import MembershipFactory, UserFactory

    user = UserFactory()
    MembershipFactory(workspace=workspace, user=user, role=role)
    client = as_user(user)
    assert client.get(url).status_code == 200
    resp = client.post(url, {"name": "www.example.com"}, format="json")
    assert resp.status_code == (201 if allowed else 403)
    if not allowed:
        assert resp.json()["code"] == "forbidden"
    assert Domain.objects.exists() == allowed


def test_moving_the_primary_keeps_one_and_the_database_refuses_a_second(alice_client, url, project):
    from django.db import IntegrityError, transaction

    first = DomainFactory(project=project, name="a.example.com", status="verified")
    second = DomainFactory(project=project, name="b.example.com", status="verified")
    assert alice_client.post(f"{url}/{first.pk}/primary", {}, format="json").status_code == 201
    assert alice_client.post(f"{url}/{second.pk}/primary", {}, format="json").status_code == 201
    assert list(Domain.objects.filter(primary=True).values_list("name", flat=True)) == ["b.example.com"]
    with pytest.raises(IntegrityError), transaction.atomic():  # a write that skips domain_set_primary
        Domain.objects.filter(pk=first.pk).update(primary=True)
    assert list(Domain.objects.filter(primary=True).values_list("name", flat=True)) == ["b.example.com"]
