"""The code console: the same services as the API, the same role rules as the platform dashboard."""
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from otp_app.models import ApiKey, Delivery, OtpRecord, SandboxMessage
from platform_app.services.identity.keys import sha256_hex
from tests.factories import PASSWORD, MembershipFactory, UserFactory
from tests.otp_app.factories import (ApiKeyFactory, DeliveryFactory, OtpRecordFactory, RoutingRuleFactory,
                                     SandboxMessageFactory, WorkspacePolicyFactory)

pytestmark = pytest.mark.django_db
PHONE = "+14155550123"


def signed_in(user):
    client = Client()
    client.post("/dashboard/login/", {"email": user.email, "password": PASSWORD})
    return client


@pytest.fixture
def viewer(workspace):
    user = UserFactory(email="vera@example.com", name="Vera")
    MembershipFactory(workspace=workspace, user=user, role="viewer")
    return user


@pytest.fixture
def test_key(workspace):
    return ApiKeyFactory(workspace=workspace, mode="test")


# Keys ---------------------------------------------------------------------------------

def test_owner_creates_a_test_key_shown_once_then_revokes_it(alice, workspace):
    client = signed_in(alice)
    resp = client.post("/dashboard/otp/acme/", {"name": "ci", "mode": "test"})
    assert resp.status_code == 200
    key = ApiKey.objects.get()
    raw = resp.context["created"]
    assert raw.startswith("svc_test_") and key.key_hash == sha256_hex(raw)
    assert raw in resp.content.decode()
    assert raw not in client.get("/dashboard/otp/acme/").content.decode()
    resp = client.post(f"/dashboard/otp/acme/keys/{key.pk}/revoke")
    assert resp.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_key_form_with_a_bad_mode_is_400_and_creates_nothing(alice, workspace):
    resp = signed_in(alice).post("/dashboard/otp/acme/", {"name": "x", "mode": "gold"})
    assert resp.status_code == 400
    assert "Select a valid choice" in resp.content.decode()
    assert ApiKey.objects.count() == 0


def test_developer_cannot_create_or_revoke_keys_and_sees_no_such_button(bob, workspace, test_key):
    client = signed_in(bob)
    page = client.get("/dashboard/otp/acme/").content.decode()
    assert "Create key" not in page and "Revoke" not in page
    assert client.post("/dashboard/otp/acme/", {"name": "x", "mode": "live"}).status_code == 403
    assert client.post(f"/dashboard/otp/acme/keys/{test_key.pk}/revoke").status_code == 403
    assert ApiKey.objects.count() == 1
    test_key.refresh_from_db()
    assert test_key.revoked_at is None


def test_revoking_another_workspaces_key_is_404(alice, charlie, workspace):
    other = ApiKeyFactory(workspace=charlie.memberships.get().workspace)
    assert signed_in(alice).post(f"/dashboard/otp/acme/keys/{other.pk}/revoke").status_code == 404
    other.refresh_from_db()
    assert other.revoked_at is None


def test_outsider_sees_404_on_every_console_page(charlie, workspace):
    client = signed_in(charlie)
    for path in ("", "log/", "sandbox/", "routing/"):
        assert client.get(f"/dashboard/otp/acme/{path}").status_code == 404
    assert client.post("/dashboard/otp/acme/sandbox/send", {"recipient": PHONE}).status_code == 404


def test_anonymous_is_sent_to_sign_in(workspace):
    resp = Client().get("/dashboard/otp/acme/log/")
    assert resp.status_code == 302 and resp["Location"].startswith("/dashboard/login/?next=/dashboard/otp/acme/log/")


# Usage chart --------------------------------------------------------------------------

def test_usage_chart_draws_one_segment_per_channel_and_day(alice, workspace, test_key):
    today = OtpRecordFactory(api_key=test_key)
    DeliveryFactory(record=today, channel="sms")
    DeliveryFactory(record=today, channel="whatsapp", send_number=2)
    old = OtpRecordFactory(api_key=test_key)
    DeliveryFactory(record=old, channel="sms", created_at=timezone.now() - timedelta(days=3))
    DeliveryFactory(record=old, channel="sms", created_at=timezone.now() - timedelta(days=40))  # outside the window
    resp = signed_in(alice).get("/dashboard/otp/acme/")
    assert resp.context["usage"].total == 3
    page = resp.content.decode()
    assert page.count("<rect x=") == 3
    assert "1 via whatsapp" in page and "sms: 2" in page


def test_no_usage_says_so(alice, workspace):
    page = signed_in(alice).get("/dashboard/otp/acme/").content.decode()
    assert "No delivery attempts in the last 14 days." in page and "<rect x=" not in page


# Log ----------------------------------------------------------------------------------

def test_log_filters_by_status_channel_and_day_and_shows_attempts(alice, workspace, test_key):
    sent = OtpRecordFactory(api_key=test_key, recipient="+14155550100")
    DeliveryFactory(record=sent, channel="whatsapp", status="failed", error="not on whatsapp")
    DeliveryFactory(record=sent, channel="sms", status="delivered")
    verified = OtpRecordFactory(api_key=test_key, status="verified", recipient="+14155550101")
    DeliveryFactory(record=verified, channel="sms")
    old = OtpRecordFactory(api_key=test_key, recipient="+14155550102", created_at=timezone.now() - timedelta(days=5))
    DeliveryFactory(record=old, channel="email")
    OtpRecordFactory(api_key=ApiKeyFactory())  # another workspace
    client = signed_in(alice)

    resp = client.get("/dashboard/otp/acme/log/")
    assert resp.status_code == 200 and resp.context["page"].paginator.count == 3
    assert "not on whatsapp" in resp.content.decode()
    assert [r.pk for r in client.get("/dashboard/otp/acme/log/?status=verified").context["page"]] == [verified.pk]
    assert [r.pk for r in client.get("/dashboard/otp/acme/log/?channel=whatsapp").context["page"]] == [sent.pk]
    day = (timezone.localdate() - timedelta(days=5)).isoformat()
    resp = client.get(f"/dashboard/otp/acme/log/?day_from={day}&day_to={day}")
    assert [r.pk for r in resp.context["page"]] == [old.pk]


def test_log_is_paginated_keeping_the_filters(alice, workspace, test_key):
    for _ in range(27):
        OtpRecordFactory(api_key=test_key, status="expired")
    client = signed_in(alice)
    resp = client.get("/dashboard/otp/acme/log/?status=expired")
    assert len(resp.context["page"]) == 25
    assert "status=expired&amp;page=2" in resp.content.decode()
    assert len(client.get("/dashboard/otp/acme/log/?status=expired&page=2").context["page"]) == 2


@pytest.mark.parametrize("query", ["status=lost", "channel=pigeon", "day_from=yesterday",
                                   "day_from=2026-05-02&day_to=2026-05-01", "page=0", "page=abc"])
def test_log_bad_filters_are_400_with_the_reason(alice, workspace, query):
    resp = signed_in(alice).get(f"/dashboard/otp/acme/log/?{query}")
    assert resp.status_code == 400
    assert 'class="error"' in resp.content.decode()


# Test send, outbox, verify -----------------------------------------------------------

def test_developer_sends_a_test_code_it_lands_in_the_outbox_and_verifies(bob, workspace, test_key,
                                                                         django_capture_on_commit_callbacks):
    client = signed_in(bob)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post("/dashboard/otp/acme/sandbox/send", {"recipient": PHONE, "channel": "sms", "locale": "en"})
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/otp/acme/sandbox/"
    record = OtpRecord.objects.get()
    assert (record.api_key, record.mode, record.channel, record.recipient) == (test_key, "test", "sms", PHONE)
    message = SandboxMessage.objects.get(record=record)
    assert Delivery.objects.get(record=record).status == "delivered" or message.code
    page = client.get("/dashboard/otp/acme/sandbox/").content.decode()
    assert message.code in page and "Verify" in page

    wrong = "000000" if message.code != "000000" else "111111"
    resp = client.post("/dashboard/otp/acme/sandbox/verify", {"record": record.pk, "code": wrong})
    assert resp.status_code == 302
    record.refresh_from_db()
    assert record.status == "sent" and record.attempts_left == 4
    client.post("/dashboard/otp/acme/sandbox/verify", {"record": record.pk, "code": message.code})
    record.refresh_from_db()
    assert record.status == "verified"


def test_test_send_without_a_test_key_is_a_clear_error(alice, workspace):
    ApiKeyFactory(workspace=workspace, mode="live")
    resp = signed_in(alice).post("/dashboard/otp/acme/sandbox/send", {"recipient": PHONE, "locale": "en"})
    assert resp.status_code == 400
    assert "Create a test key first" in resp.content.decode()
    assert OtpRecord.objects.count() == 0


@pytest.mark.parametrize("data, message", [
    ({"recipient": "12345", "locale": "en"}, "E.164"),
    ({"recipient": PHONE, "channel": "email", "locale": "en"}, "not a valid email"),
    ({"recipient": PHONE, "channel": "fax", "locale": "en"}, "Select a valid choice"),
    ({"recipient": "", "locale": "en"}, "This field is required"),
])
def test_test_send_bad_input_changes_nothing(alice, workspace, test_key, data, message):
    resp = signed_in(alice).post("/dashboard/otp/acme/sandbox/send", data)
    assert resp.status_code == 400
    assert message in resp.content.decode()
    assert OtpRecord.objects.count() == 0


def test_test_send_to_a_country_the_policy_refuses_is_403_and_nothing_sent(alice, workspace, test_key):
    WorkspacePolicyFactory(workspace=workspace, allowed_countries=["DE"])
    resp = signed_in(alice).post("/dashboard/otp/acme/sandbox/send", {"recipient": PHONE, "locale": "en"})
    assert resp.status_code == 403 and "not allowed" in resp.content.decode()
    assert OtpRecord.objects.count() == 0


def test_viewer_reads_the_outbox_but_gets_no_send_or_verify_and_is_refused(viewer, workspace, test_key):
    message = SandboxMessageFactory(record=OtpRecordFactory(api_key=test_key))
    client = signed_in(viewer)
    page = client.get("/dashboard/otp/acme/sandbox/").content.decode()
    assert message.code in page
    assert "Send test code" not in page and ">Verify</button>" not in page
    assert client.post("/dashboard/otp/acme/sandbox/send", {"recipient": PHONE, "locale": "en"}).status_code == 403
    resp = client.post("/dashboard/otp/acme/sandbox/verify", {"record": message.record_id, "code": "123456"})
    assert resp.status_code == 403
    assert OtpRecord.objects.get().status == "sent" and OtpRecord.objects.count() == 1


@pytest.mark.parametrize("code", ["12345", "abcdef", ""])
def test_verify_needs_six_digits(alice, workspace, test_key, code):
    record = OtpRecordFactory(api_key=test_key)
    resp = signed_in(alice).post("/dashboard/otp/acme/sandbox/verify", {"record": record.pk, "code": code})
    assert resp.status_code == 400 and "6 digits" in resp.content.decode()
    record.refresh_from_db()
    assert record.attempts_left == 5


def test_verify_refuses_live_codes_and_other_workspaces_records(alice, charlie, workspace):
    live = OtpRecordFactory(api_key=ApiKeyFactory(workspace=workspace, mode="live"))
    foreign = OtpRecordFactory(api_key=ApiKeyFactory(workspace=charlie.memberships.get().workspace))
    client = signed_in(alice)
    resp = client.post("/dashboard/otp/acme/sandbox/verify", {"record": live.pk, "code": "123456"})
    assert resp.status_code == 400 and "Only test codes" in resp.content.decode()
    assert client.post("/dashboard/otp/acme/sandbox/verify", {"record": foreign.pk, "code": "123456"}).status_code == 404
    live.refresh_from_db()
    foreign.refresh_from_db()
    assert live.status == foreign.status == "sent"


def test_verifying_a_verified_code_again_is_409(alice, workspace, test_key):
    record = OtpRecordFactory(api_key=test_key, status="verified")
    resp = signed_in(alice).post("/dashboard/otp/acme/sandbox/verify", {"record": record.pk, "code": "123456"})
    assert resp.status_code == 409 and "already verified" in resp.content.decode()


def test_sandbox_send_and_verify_are_post_only(alice, workspace):
    client = signed_in(alice)
    assert client.get("/dashboard/otp/acme/sandbox/send").status_code == 405
    assert client.get("/dashboard/otp/acme/sandbox/verify").status_code == 405


# Routing -------------------------------------------------------------------------------

def test_routing_page_shows_rules_defaults_channels_and_policy(viewer, workspace):
    RoutingRuleFactory(workspace=workspace, country="DE", channels=["sms", "whatsapp"])
    WorkspacePolicyFactory(workspace=workspace, allowed_countries=["DE", "FR"])
    page = signed_in(viewer).get("/dashboard/otp/acme/routing/").content.decode()
    assert "sms → whatsapp" in page and "whatsapp → sms" in page  # the rule, then the default
    assert "DE, FR" in page and "not configured" in page


def test_console_home_lists_my_workspaces_only(alice, charlie, workspace):
    page = signed_in(alice).get("/dashboard/otp/").content.decode()
    assert 'href="/dashboard/otp/acme/"' in page and "charlies" not in page


def test_log_shows_each_attempt_of_a_fallback(alice, workspace, test_key):
    """A record that fell back from WhatsApp to SMS lists both attempts, in order, with the error."""
    record = OtpRecordFactory(api_key=test_key, route=["whatsapp", "sms"], channel="sms")
    DeliveryFactory(record=record, channel="whatsapp", status="failed", error="131026 not a WhatsApp user", tries=1)
    DeliveryFactory(record=record, channel="sms", status="sent", tries=1)
    page = signed_in(alice).get("/dashboard/otp/acme/log/?channel=sms").content.decode()
    article = page[page.index(f'id="{record.pk}"'):]
    assert article.index("whatsapp") < article.index("131026 not a WhatsApp user") < article.index(">sms<")


def test_a_user_in_no_workspace_creates_one_from_the_console(db):
    user = UserFactory(email="newcomer@example.com")
    client = signed_in(user)
    page = client.get("/dashboard/otp/").content.decode()
    assert "You are in no workspace yet" in page and "Create a workspace" in page
    resp = client.post("/dashboard/otp/", {"name": "Newco", "slug": "newco"})
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/otp/newco/"
    assert user.memberships.get().workspace.slug == "newco" and user.memberships.get().role == "owner"
    assert client.get("/dashboard/otp/newco/").status_code == 200
    bad = client.post("/dashboard/otp/", {"name": "", "slug": "x"})
    assert bad.status_code == 400 and user.memberships.count() == 1


@pytest.mark.parametrize("data", [
    {"recipient": "12345", "channel": "sms", "locale": "de"},  # refused by the service (not E.164)
    {"recipient": PHONE, "channel": "email", "locale": "fr"},  # refused by the service (not an email)
    {"recipient": PHONE, "channel": "fax", "locale": "it"},  # refused by the form (the channel)
])
def test_test_send_errors_keep_what_was_typed(alice, workspace, test_key, data):
    resp = signed_in(alice).post("/dashboard/otp/acme/sandbox/send", data)
    assert resp.status_code == 400
    html = resp.content.decode()
    assert f'name="recipient" value="{data["recipient"]}"' in html
    assert f'<option value="{data["locale"]}" selected>' in html
    if data["channel"] != "fax":
        assert f'<option value="{data["channel"]}" selected>' in html
    assert OtpRecord.objects.count() == 0


def test_verify_errors_keep_the_typed_code(alice, workspace, test_key, django_capture_on_commit_callbacks):
    client = signed_in(alice)
    with django_capture_on_commit_callbacks(execute=True):  # the delivery puts the code in the outbox
        client.post("/dashboard/otp/acme/sandbox/send", {"recipient": PHONE, "locale": "en"})
    record = OtpRecord.objects.get()
    resp = client.post("/dashboard/otp/acme/sandbox/verify", {"record": record.pk, "code": "12ab"})
    assert resp.status_code == 400 and 'name="code" value="12ab"' in resp.content.decode()
