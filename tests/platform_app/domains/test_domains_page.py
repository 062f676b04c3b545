"""The project's Domains page: the records to create and the live status, add/verify/primary/remove forms
for roles holding `domains`, nothing to change for the others, CSRF on every form."""
import pytest
from django.test import Client

from platform_app.models import Domain
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.domains.factories import DomainFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(project):
    return f"/dashboard/acme/projects/{project.slug}/domains/"


def signed_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def test_the_page_lists_records_and_status(alice, page, project, settings):
    settings.DOMAINS_CNAME_TARGET = "cname.platform.example"
    domain = DomainFactory(project=project, name="www.example.com")
    DomainFactory(project=project, name="example.com", status="verified", primary=True)
    resp = signed_in(alice).get(page)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "www.example.com" in html and f"_svc-challenge.www.example.com" in html
    assert domain.verification_token in html and "cname.platform.example" in html
    assert "Pending" in html and "Verified" in html and "primary" in html
    assert 'class="table"' in html and 'name="csrfmiddlewaretoken"' in html and ">Add<" in html


def test_add_verify_primary_remove_through_the_forms(alice, page, project, zone):
    client = signed_in(alice)
    resp = client.post(page, {"name": "Shop.Example.com", "git_branch": ""})
    assert resp.status_code == 302 and resp["Location"] == page
    domain = Domain.objects.get(name="shop.example.com")
    zone.set("shop.example.com", "CNAME", "cname.localhost")
    resp = client.post(f"{page}{domain.pk}/verify", follow=True)
    assert resp.status_code == 200 and "shop.example.com checked: verified." in resp.content.decode()
    assert Domain.objects.get(pk=domain.pk).status == "verified"
    client.post(f"{page}{domain.pk}/primary")
    assert Domain.objects.get(pk=domain.pk).primary
    client.post(f"{page}{domain.pk}/remove")
    assert not Domain.objects.exists()


def test_bad_input_shows_on_the_form(alice, page, project):
    DomainFactory(name="taken.example.com", status="verified")
    client = signed_in(alice)
    for name, message in (("not a host", "host name"), ("taken.example.com", "already added"),
                          ("shop.localhost", "belongs to the platform")):
        resp = client.post(page, {"name": name})
        assert resp.status_code == 400 and message in resp.content.decode()
    assert Domain.objects.count() == 1


def test_viewers_see_no_forms_and_cannot_post(workspace, page, project):
    viewer = UserFactory()
    MembershipFactory(workspace=workspace, user=viewer, role="viewer")
    domain = DomainFactory(project=project, name="www.example.com")
    client = signed_in(viewer)
    html = client.get(page).content.decode()
    assert "www.example.com" in html and ">Add<" not in html and "/remove" not in html
    assert client.post(page, {"name": "new.example.com"}).status_code == 403
    assert client.post(f"{page}{domain.pk}/remove").status_code == 403
    assert list(Domain.objects.values_list("name", flat=True)) == ["www.example.com"]


def test_outsiders_get_404_and_forms_need_csrf(alice, charlie, page, project):
    assert signed_in(charlie).get(page).status_code == 404
    strict = signed_in(alice, enforce_csrf_checks=True)
    assert strict.post(page, {"name": "www.example.com"}).status_code == 403
    assert not Domain.objects.exists()
    assert Client().get(page).status_code == 302  # to sign-in
