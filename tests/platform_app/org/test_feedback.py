"""Feedback through the HTTP API and the pages: anyone sends (visitors limited per address), staff triage and
delete in the inbox; everyone else gets 403; the feedback link is on every page."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from platform_app.models import Feedback
from tests.platform_app.org.factories import FeedbackFactory

pytestmark = pytest.mark.django_db


def send(client, **body):
    return client.post("/v1/feedback", {"message": "The deploy button is hard to find", "category": "idea",
                                        **body}, format="json")


def test_a_visitor_sends_feedback_and_is_limited_per_address(settings):
    settings.FEEDBACK_ANONYMOUS_PER_HOUR = 2
    visitor = APIClient(REMOTE_ADDR="203.0.113.5")
    resp = send(visitor, page="/dashboard/acme/", email="Ada@Example.com")
    assert resp.status_code == 201 and resp.json().keys() == {"id"}
    item = Feedback.objects.get(pk=resp.json()["id"])
    assert (item.user, item.email, item.page, item.status, item.ip) == (None, "ada@example.com", "/dashboard/acme/",
                                                                        "new", "203.0.113.5")
    assert send(visitor).status_code == 201
    limited = send(visitor)
    assert limited.status_code == 429 and limited.json()["code"] == "rate_limited" and limited["Retry-After"]
    assert send(APIClient(REMOTE_ADDR="198.51.100.7")).status_code == 201  # another address
    assert Feedback.objects.count() == 3


def test_a_signed_in_sender_is_recorded_and_limited_per_user(alice, alice_client, settings):
    settings.FEEDBACK_PER_USER_PER_HOUR = 1
    assert send(alice_client, category="bug").status_code == 201
    assert Feedback.objects.get().user == alice
    assert send(alice_client).status_code == 429


@pytest.mark.parametrize("body, field", [
    ({"category": "complaint"}, "category"), ({"message": "   "}, "message"), ({"message": "x" * 5001}, "message"),
    ({"email": "not-an-address"}, "email"), ({"page": "/" * 501}, "page"), ({"rating": 5}, "rating"),
    ({"message": 42}, "message"),
])
def test_bad_feedback_is_400_naming_the_field(api, body, field):
    resp = send(api, **body)
    assert resp.status_code == 400 and field in resp.json()["details"], resp.json()
    assert not Feedback.objects.exists()


def test_the_inbox_is_for_staff(staff, as_user, alice):
    older = FeedbackFactory(message="older")
    newer = FeedbackFactory(message="newer", category="bug", status="triaged")
    client = as_user(staff)
    listed = client.get("/v1/feedback/inbox").json()
    assert [i["id"] for i in listed["items"]] == [newer.pk, older.pk] and listed["nextCursor"] is None
    item = listed["items"][0]
    assert {"id", "message", "category", "page", "email", "status", "assignee", "note", "userId", "createdAt"} <= \
        item.keys()
    assert [i["id"] for i in client.get("/v1/feedback/inbox?status=triaged").json()["items"]] == [newer.pk]
    assert [i["id"] for i in client.get("/v1/feedback/inbox?category=idea").json()["items"]] == [older.pk]
    assert client.get("/v1/feedback/inbox?status=lost").status_code == 400
    for empty in ("status=", "category="):  # an empty value is not one of the enum's either
        refused = client.get(f"/v1/feedback/inbox?{empty}")
        assert refused.status_code == 400 and refused.json()["code"] == "validation_error"
    for resp in (as_user(alice).get("/v1/feedback/inbox"),
                 as_user(alice).patch(f"/v1/feedback/inbox/{older.pk}", {"status": "done"}, format="json"),
                 as_user(alice).delete(f"/v1/feedback/inbox/{older.pk}")):
        assert resp.status_code == 403 and resp.json()["code"] == "forbidden"
    assert Feedback.objects.get(pk=older.pk).status == "new"


def test_staff_triage_and_delete(staff, as_user):
    item = FeedbackFactory()
    client = as_user(staff)
    resp = client.patch(f"/v1/feedback/inbox/{item.pk}", {"status": "triaged", "assignee": staff.pk,
                                                          "note": "Known; fix next week"}, format="json")
    assert resp.status_code == 200, resp.json()
    assert (resp.json()["status"], resp.json()["assignee"], resp.json()["note"]) == ("triaged", staff.pk,
                                                                                    "Known; fix next week")
    by_email = client.patch(f"/v1/feedback/inbox/{item.pk}", {"assignee": "STAFF@example.com"}, format="json")
    assert by_email.json()["assigneeEmail"] == "staff@example.com"
    assert client.patch(f"/v1/feedback/inbox/{item.pk}", {"assignee": None}, format="json").json()["assignee"] is None
    for body, field in (({"status": "archived"}, "status"), ({"assignee": "nobody@example.com"}, "assignee")):
        bad = client.patch(f"/v1/feedback/inbox/{item.pk}", body, format="json")
        assert bad.status_code == 400 and field in bad.json()["details"]
    assert client.patch("/v1/feedback/inbox/fbk_unknown", {"status": "done"}, format="json").status_code == 404
    assert client.delete(f"/v1/feedback/inbox/{item.pk}").json() == {"deleted": True}
    assert not Feedback.objects.exists()


def test_a_staff_token_needs_the_scope(staff, as_token):
    item = FeedbackFactory()
    read_only = as_token(staff, scopes=["read"])
    assert read_only.get("/v1/feedback/inbox").status_code == 200
    assert read_only.delete(f"/v1/feedback/inbox/{item.pk}").json()["code"] == "insufficient_scope"


# Pages ------------------------------------------------------------------------------------------

def test_every_page_links_to_the_feedback_page_which_sends_it(alice, workspace):
    browser = Client()
    browser.force_login(alice)
    html = browser.get("/dashboard/acme/").content.decode()
    assert 'href="/feedback/?page=/dashboard/acme/"' in html
    assert 'href="/feedback/?page=/"' in Client().get("/").content.decode()
    form = browser.get("/feedback/?page=/dashboard/acme/")
    assert form.status_code == 200 and 'name="page"' in form.content.decode()
    sent = browser.post("/feedback/", {"category": "bug", "message": "The log stops", "page": "/dashboard/acme/"})
    assert sent.status_code == 302 and sent["Location"] == "/dashboard/acme/"
    item = Feedback.objects.get()
    assert (item.user, item.category, item.page) == (alice, "bug", "/dashboard/acme/")
    bad = browser.post("/feedback/", {"category": "bug", "message": ""})
    assert bad.status_code == 400 and Feedback.objects.count() == 1


def test_a_visitors_page_sends_it_and_a_foreign_page_is_dropped(settings):
    visitor = Client()
    sent = visitor.post("/feedback/", {"category": "question", "message": "Pricing?", "page": "//evil.example/x"})
    assert sent.status_code == 302 and sent["Location"] == "/feedback/"
    assert Feedback.objects.get().page == ""
    settings.FEEDBACK_ANONYMOUS_PER_HOUR = 1
    limited = visitor.post("/feedback/", {"category": "question", "message": "Again?"})
    assert limited.status_code == 429 and Feedback.objects.count() == 1


def test_the_staff_inbox_page(staff, alice):
    item = FeedbackFactory(message="Dark mode please")
    browser = Client()
    browser.force_login(staff)
    html = browser.get("/feedback/inbox/").content.decode()
    assert "Dark mode please" in html and 'name="assignee"' in html
    assert browser.post(f"/feedback/inbox/{item.pk}", {"status": "done", "assignee": staff.pk,
                                                       "note": "Shipped"}).status_code == 302
    item.refresh_from_db()
    assert (item.status, item.assignee, item.note) == ("done", staff, "Shipped")
    assert "Dark mode please" not in browser.get("/feedback/inbox/?status=new").content.decode()
    assert browser.post(f"/feedback/inbox/{item.pk}", {"delete": "1"}).status_code == 302
    assert not Feedback.objects.exists()
    member = Client()
    member.force_login(alice)
    assert member.get("/feedback/inbox/").status_code == 403
    assert Client().get("/feedback/inbox/").status_code == 302  # to sign in
