"""A pending domain is a claim, not a lock: another workspace may add the same name, the first to verify takes it
(the other claims are removed), a CNAME or address alone does not decide between claimants (only a claim's own
TXT token does), and claims that never verify expire (beat, DOMAIN_CLAIM_EXPIRY_DAYS)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.models import AuditEvent, Domain
from platform_app.tasks.domains import domain_claims_expire
from tests.platform_app.domains.factories import DomainFactory, ready_deployment
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def squatter(charlie, as_user, settings):
    """charlie's project `squat` (a deployment of its own) and his API client; he claims names first."""
    project = ProjectFactory(workspace=charlie.memberships.get().workspace, name="Squat", slug="squat")
    ready_deployment(project, {"index.html": "<h1>squat</h1>"})
    client = as_user(charlie)
    client.url = f"/v1/orgs/charlies/projects/{project.pk}/domains"
    return client


def add(client, url, name="www.example.com"):
    resp = client.post(url, {"name": name}, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def verify(client, url, domain_id):
    return client.post(f"{url}/{domain_id}/verify", {}, format="json")


def test_a_pending_claim_does_not_block_the_owner_and_the_first_to_verify_wins(
        alice_client, url, project, squatter, zone, client):
    theirs = add(squatter, squatter.url)
    ours = add(alice_client, url)  # was 409 domain_taken while charlie's claim sat unverified
    assert Domain.objects.filter(name="www.example.com").count() == 2
    zone.set("_svc-challenge.www.example.com", "TXT", Domain.objects.get(pk=ours["id"]).verification_token)
    assert verify(squatter, squatter.url, theirs["id"]).json()["status"] == "pending"  # not his token
    body = verify(alice_client, url, ours["id"]).json()
    assert body["status"] == "verified"
    assert list(Domain.objects.filter(name="www.example.com").values_list("pk", flat=True)) == [ours["id"]]
    removed = AuditEvent.objects.get(action="domain.removed", target_id=theirs["id"])
    assert removed.workspace.slug == "charlies" and removed.data["reason"] == "verified_by_another_project"
    assert client.get("/", HTTP_HOST="www.example.com").content == b"<h1>shop</h1>"
    # his claim is gone; adding it again is the contract's 409 now that a project verified the name
    assert verify(squatter, squatter.url, theirs["id"]).status_code == 404
    again = squatter.post(squatter.url, {"name": "www.example.com"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "domain_taken"


def test_while_a_name_is_contested_only_a_claims_own_txt_token_verifies(alice_client, url, project, squatter, zone):
    theirs = add(squatter, squatter.url)
    zone.set("www.example.com", "CNAME", "cname.localhost.")  # points at the platform, not at a project
    zone.set("www.example.com", "A", "203.0.113.10")
    ours = add(alice_client, url)
    assert verify(squatter, squatter.url, theirs["id"]).json()["status"] == "pending"
    assert verify(alice_client, url, ours["id"]).json()["status"] == "pending"
    zone.set("_svc-challenge.www.example.com", "TXT", Domain.objects.get(pk=theirs["id"]).verification_token)
    assert verify(squatter, squatter.url, theirs["id"]).json()["status"] == "verified"  # he proved control
    assert not Domain.objects.filter(pk=ours["id"]).exists()


def test_an_uncontested_claim_still_verifies_by_cname(alice_client, url, project, zone):
    ours = add(alice_client, url)
    zone.set("www.example.com", "CNAME", "cname.localhost.")
    assert verify(alice_client, url, ours["id"]).json()["status"] == "verified"


def test_the_same_project_cannot_claim_a_name_twice(alice_client, url, project):
    add(alice_client, url)
    resp = alice_client.post(url, {"name": "WWW.example.com"}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "domain_taken"
    assert Domain.objects.count() == 1


def test_claims_that_never_verify_expire(project, settings, travel):
    assert settings.DOMAIN_CLAIM_EXPIRY_DAYS == 7
    assert settings.CELERY_BEAT_SCHEDULE["domains-claims-expire"]["task"] == \
        "platform_app.tasks.domains.domain_claims_expire"
    old = DomainFactory(project=project, name="old.example.com")
    held = DomainFactory(project=project, name="held.example.com", status="verified", verified_at=timezone.now())
    lost = DomainFactory(project=project, name="lost.example.com", status="misconfigured", verified_at=timezone.now())
    DomainFactory(project=project, name="www.example.com", redirect_to="old.example.com", status="verified")
    travel(timedelta(days=6).total_seconds())
    young = DomainFactory(project=project, name="young.example.com")
    assert domain_claims_expire() == 0
    travel(timedelta(days=1, minutes=1).total_seconds())
    assert domain_claims_expire() == 1
    assert set(Domain.objects.values_list("name", flat=True)) == {held.name, lost.name, young.name, "www.example.com"}
    assert Domain.objects.get(name="www.example.com").redirect_to == ""  # no redirect to a removed name
    event = AuditEvent.objects.get(action="domain.expired")
    assert event.target_id == old.pk and event.data["name"] == "old.example.com"
    settings.DOMAIN_CLAIM_EXPIRY_DAYS = 1
    assert domain_claims_expire() == 1 and not Domain.objects.filter(pk=young.pk).exists()
