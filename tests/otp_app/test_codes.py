"""Send, verify, resend, status and expiry through the HTTP API, with a sandbox key."""
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from otp_app.models import Delivery, IdempotencyKey, OtpRecord, SandboxMessage
from otp_app.services.codes import code_hash
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import OtpRecordFactory, WorkspacePolicyFactory

pytestmark = pytest.mark.django_db


def send(client, **body):
    body.setdefault("recipient", PHONE)
    body.setdefault("locale", "en")
    return client.post("/api/v1/otp/send", body, format="json")


def sandbox_code(record_id):
    return SandboxMessage.objects.filter(record_id=record_id).order_by("-created_at", "-pk").first().code


def test_send_returns_the_record_and_the_sandbox_gets_the_message(sandbox):
    client, key = sandbox
    resp = send(client, channel="sms")
    assert resp.status_code == 201
    body = resp.json()
    assert body["id"].startswith("otp_")
    assert body["status"] == "sent" and body["channel"] == "sms" and body["attempts_left"] == 5
    assert body["expires_at"].endswith("Z")
    msg = SandboxMessage.objects.get()
    assert msg.recipient == PHONE and msg.code.isdigit() and len(msg.code) == 6
    assert msg.code in msg.text and "10 minutes" in msg.text
    record = OtpRecord.objects.get()
    assert record.code_hash == code_hash(record.pk, msg.code)
    assert msg.code not in record.code_hash
    outbox = client.get("/api/v1/sandbox/messages").json()["results"]
    assert outbox[0]["otp_id"] == body["id"] and outbox[0]["code"] == msg.code


def test_verify_right_code_then_again_is_409(sandbox):
    client, _ = sandbox
    record_id = send(client).json()["id"]
    resp = client.post("/api/v1/otp/verify", {"id": record_id, "code": sandbox_code(record_id)}, format="json")
    assert resp.status_code == 200
    assert resp.json() == {"id": record_id, "verified": True, "status": "verified", "attempts_left": 5}
    again = client.post("/api/v1/otp/verify", {"id": record_id, "code": sandbox_code(record_id)}, format="json")
    assert again.status_code == 409
    assert again.json() == {"error": {"code": "otp_already_verified", "message": "This code was already verified."}}


def test_five_wrong_codes_then_the_right_one_is_refused(sandbox):
    client, _ = sandbox
    record_id = send(client).json()["id"]
    right = sandbox_code(record_id)
    wrong = "000000" if right != "000000" else "111111"
    for left in (4, 3, 2, 1):
        resp = client.post("/api/v1/otp/verify", {"id": record_id, "code": wrong}, format="json")
        assert resp.status_code == 200
        assert resp.json() == {"id": record_id, "verified": False, "status": "sent", "attempts_left": left}
    resp = client.post("/api/v1/otp/verify", {"id": record_id, "code": wrong}, format="json")
    assert resp.json() == {"id": record_id, "verified": False, "status": "failed", "attempts_left": 0}
    resp = client.post("/api/v1/otp/verify", {"id": record_id, "code": right}, format="json")
    assert resp.status_code == 409
    assert resp.json()["error"]["code"] == "otp_attempts_exhausted"
    assert OtpRecord.objects.get().status == "failed"


def test_code_expires_after_ten_minutes(sandbox, travel):
    client, _ = sandbox
    record_id = send(client).json()["id"]
    code = sandbox_code(record_id)
    travel(601)
    assert client.get(f"/api/v1/otp/{record_id}").json()["status"] == "expired"
    resp = client.post("/api/v1/otp/verify", {"id": record_id, "code": code}, format="json")
    assert resp.status_code == 409
    assert resp.json()["error"]["code"] == "otp_expired"
    assert OtpRecord.objects.get().status == "expired"


def test_expiry_sweep_marks_over_ttl_records(sandbox, travel):
    from otp_app.tasks import otp_expire_due

    client, _ = sandbox
    send(client)
    travel(601)
    assert otp_expire_due() == 1
    assert OtpRecord.objects.get().status == "expired"


def test_status_shows_delivery_and_stays_readable_after_the_end(sandbox):
    client, _ = sandbox
    record_id = send(client, channel="whatsapp").json()["id"]
    client.post("/api/v1/otp/verify", {"id": record_id, "code": sandbox_code(record_id)}, format="json")
    body = client.get(f"/api/v1/otp/{record_id}").json()
    assert body["status"] == "verified"
    assert [(d["channel"], d["status"]) for d in body["delivery"]] == [("whatsapp", "sent")]


def test_another_keys_record_is_404(sandbox, key_client):
    client, _ = sandbox
    record_id = send(client).json()["id"]
    other, _ = key_client("test")
    assert other.get(f"/api/v1/otp/{record_id}").status_code == 404
    resp = other.post("/api/v1/otp/verify", {"id": record_id, "code": "123456"}, format="json")
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "not_found"
    assert OtpRecord.objects.get().attempts_left == 5


def test_resend_cooldown_then_fresh_code(sandbox, travel):
    client, _ = sandbox
    record_id = send(client).json()["id"]
    old = sandbox_code(record_id)
    resp = client.post("/api/v1/otp/resend", {"id": record_id}, format="json")
    assert resp.status_code == 429
    assert resp.json()["error"]["code"] == "resend_cooldown"
    assert 1 <= int(resp["Retry-After"]) <= 30
    travel(31)
    resp = client.post("/api/v1/otp/resend", {"id": record_id, "channel": "sms"}, format="json")
    assert resp.status_code == 200
    assert resp.json()["channel"] == "sms" and resp.json()["sends"] == 2
    new = SandboxMessage.objects.filter(record_id=record_id).order_by("-pk").first().code
    if new != old:
        bad = client.post("/api/v1/otp/verify", {"id": record_id, "code": old}, format="json")
        assert bad.json()["verified"] is False
    good = client.post("/api/v1/otp/verify", {"id": record_id, "code": new}, format="json")
    assert good.json()["verified"] is True
    assert Delivery.objects.filter(record_id=record_id).count() == 2


def test_resend_cap_per_record(sandbox, travel, settings):
    settings.OTP_MAX_SENDS_PER_RECORD = 2
    client, _ = sandbox
    record_id = send(client).json()["id"]
    travel(31)
    assert client.post("/api/v1/otp/resend", {"id": record_id}, format="json").status_code == 200
    travel(31)
    resp = client.post("/api/v1/otp/resend", {"id": record_id}, format="json")
    assert resp.status_code == 429
    assert resp.json()["error"]["code"] == "resend_limit"


# Idempotency -----------------------------------------------------------------------------

KEY = "7f1c2a52-3a8e-4b7e-9d65-2f5c3c1a9b10"


def test_idempotent_replay_returns_the_first_record_without_a_second_message(sandbox):
    client, _ = sandbox
    first = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "en"}, format="json",
                        HTTP_IDEMPOTENCY_KEY=KEY)
    again = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "en"}, format="json",
                        HTTP_IDEMPOTENCY_KEY=KEY)
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert SandboxMessage.objects.count() == 1 and OtpRecord.objects.count() == 1


def test_same_idempotency_key_different_body_is_409(sandbox):
    client, _ = sandbox
    client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "en"}, format="json", HTTP_IDEMPOTENCY_KEY=KEY)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "de"}, format="json",
                       HTTP_IDEMPOTENCY_KEY=KEY)
    assert resp.status_code == 409
    assert resp.json()["error"]["code"] == "idempotency_conflict"
    assert OtpRecord.objects.count() == 1


def test_a_replay_is_not_counted_and_never_refused_what_its_first_request_got(sandbox, settings):
    settings.OTP_SENDS_PER_RECIPIENT, settings.OTP_SENDS_PER_RECIPIENT_WINDOW = 2, 10**9  # no window ends meanwhile
    client, _ = sandbox
    first = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY=KEY)
    for _ in range(3):  # replays give back what they counted: the recipient's second code still goes out
        again = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY=KEY)
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    second = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert second.status_code == 201
    third = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert third.status_code == 429 and third.json()["error"]["code"] == "recipient_rate_limited"
    # the recipient is at its limit now, yet the first request's replay still answers with its record
    again = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY=KEY)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other_body = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "de"}, format="json",
                             HTTP_IDEMPOTENCY_KEY=KEY)
    assert other_body.status_code == 409 and other_body.json()["error"]["code"] == "idempotency_conflict"
    assert OtpRecord.objects.count() == 2 and SandboxMessage.objects.count() == 2


def test_idempotency_key_is_kept_24_hours(sandbox, travel):
    client, _ = sandbox
    first = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY=KEY).json()
    travel(60 * 60 * 24 + 1)
    later = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY=KEY)
    assert later.status_code == 201 and later.json()["id"] != first["id"]
    assert IdempotencyKey.objects.count() == 1


# Bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("body, code", [
    ({"recipient": "4155550123"}, "invalid_recipient"),
    ({"recipient": "+1415"}, "invalid_recipient"),
    ({"recipient": PHONE, "locale": "xx"}, "invalid_locale"),
    ({"recipient": PHONE, "locale": "en-Sw-xhoXV-ei"}, "invalid_locale"),  # not BCP 47: a region after a variant
    ({"recipient": PHONE, "locale": "en--GB"}, "invalid_locale"),
    ({"recipient": PHONE, "locale": "en-GB-"}, "invalid_locale"),
    ({"recipient": PHONE, "locale": "english"}, "invalid_locale"),
    ({"recipient": PHONE, "channel": "pigeon"}, "invalid_channel"),
    ({"recipient": PHONE, "channel": "email"}, "invalid_recipient"),
    ({"recipient": "a@example.com", "channel": "sms"}, "invalid_recipient"),
    ({"locale": "en"}, "validation_error"),
    ({"recipient": PHONE, "priority": "high"}, "validation_error"),
])
def test_bad_send_input_is_400_and_nothing_happens(sandbox, body, code):
    client, _ = sandbox
    resp = client.post("/api/v1/otp/send", body, format="json")
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == code
    assert OtpRecord.objects.count() == 0 and SandboxMessage.objects.count() == 0


@pytest.mark.parametrize("locale", ["de-CH-1996", "pt_BR", "en-US-x-twain", "de-Latn-CH-1901", "en-GB-oxendict"])
def test_a_bcp47_locale_of_any_length_is_kept_whole(sandbox, locale):
    """Up to BCP 47's 35 characters: the column holds what the schema allows (a shorter column failed on
    PostgreSQL only)."""
    client, _ = sandbox
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": locale}, format="json")
    assert resp.status_code == 201 and resp.json()["locale"] == locale
    assert OtpRecord.objects.get().locale == locale


def test_non_uuid_idempotency_key_is_400(sandbox):
    client, _ = sandbox
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", HTTP_IDEMPOTENCY_KEY="abc")
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "invalid_idempotency_key"
    assert OtpRecord.objects.count() == 0


@pytest.mark.parametrize("code", ["12ab56", "12345", "1234567", "", "１２３４５６"])
def test_malformed_codes_are_400_and_cost_no_attempt(sandbox, code):
    client, _ = sandbox
    record_id = send(client).json()["id"]
    resp = client.post("/api/v1/otp/verify", {"id": record_id, "code": code}, format="json")
    assert resp.status_code == 400
    assert OtpRecord.objects.get().attempts_left == 5


def test_missing_and_revoked_keys_are_401(sandbox, api):
    client, key = sandbox
    resp = api.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == "unauthenticated"
    from otp_app.services.keys import otp_key_revoke

    otp_key_revoke(key=key)
    resp = send(client)
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == "api_key_revoked"
    assert OtpRecord.objects.count() == 0


def test_live_key_on_the_sandbox_outbox_is_403(key_client):
    client, _ = key_client("live")
    resp = client.get("/api/v1/sandbox/messages")
    assert resp.status_code == 403
    assert resp.json()["error"]["code"] == "sandbox_only"


def test_unknown_route_is_404_in_the_otp_shape(sandbox):
    client, _ = sandbox
    resp = client.get("/api/v1/nothing/here")
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "not_found"


# Abuse limits -----------------------------------------------------------------------------

def test_per_recipient_send_limit(sandbox, settings):
    settings.OTP_SENDS_PER_RECIPIENT_WINDOW = 10**9  # no window ends between the sends
    client, _ = sandbox
    for _ in range(settings.OTP_SENDS_PER_RECIPIENT):
        assert send(client).status_code == 201
    resp = send(client)
    assert resp.status_code == 429
    assert resp.json()["error"]["code"] == "recipient_rate_limited"
    assert "Retry-After" in resp
    assert OtpRecord.objects.count() == settings.OTP_SENDS_PER_RECIPIENT


def test_country_allow_list(sandbox, workspace):
    WorkspacePolicyFactory(workspace=workspace, allowed_countries=["DE"])
    client, _ = sandbox
    resp = send(client)
    assert resp.status_code == 403
    assert resp.json()["error"]["code"] == "country_not_allowed"
    assert send(client, recipient="+4915112345678").status_code == 201


def test_only_this_workspaces_failed_records_of_the_last_24_hours_count(sandbox, settings):
    settings.OTP_FAILED_RECORDS_PER_RECIPIENT = 2
    settings.OTP_SENDS_PER_RECIPIENT = 10
    client, key = sandbox
    now = timezone.now()
    OtpRecordFactory(api_key=key, status="failed", created_at=now - timedelta(hours=24, seconds=5))  # too old
    OtpRecordFactory(status="failed")  # the same number in another workspace
    OtpRecordFactory(api_key=key, recipient="+14155550124", status="failed")  # another number
    OtpRecordFactory(api_key=key, status="expired")
    OtpRecordFactory(api_key=key, status="failed", created_at=now - timedelta(hours=23))
    assert send(client).status_code == 201  # one failed record counts: under the limit of 2
    OtpRecordFactory(api_key=key, status="failed")
    before = OtpRecord.objects.count()
    resp = send(client)
    assert resp.status_code == 429 and resp.json()["error"]["code"] == "recipient_blocked"
    assert resp["Retry-After"] == "3600" and OtpRecord.objects.count() == before


def test_recipient_with_too_many_failed_records_is_blocked(sandbox, settings):
    settings.OTP_FAILED_RECORDS_PER_RECIPIENT = 1
    settings.OTP_SENDS_PER_RECIPIENT = 10
    client, _ = sandbox
    record_id = send(client).json()["id"]
    OtpRecord.objects.filter(pk=record_id).update(status="failed")
    resp = send(client)
    assert resp.status_code == 429
    assert resp.json()["error"]["code"] == "recipient_blocked"


def test_resends_count_against_the_recipient_limit(sandbox, settings):
    settings.OTP_SENDS_PER_RECIPIENT, settings.OTP_RESEND_COOLDOWN_SECONDS = 3, 0
    settings.OTP_SENDS_PER_RECIPIENT_WINDOW = 10**9  # no window ends between the sends
    client, _ = sandbox
    ids = [send(client).json()["id"] for _ in range(3)]
    assert send(client).json()["error"]["code"] == "recipient_rate_limited"
    for record_id in ids:
        resp = client.post("/api/v1/otp/resend", {"id": record_id}, format="json")
        assert resp.status_code == 429 and resp.json()["error"]["code"] == "recipient_rate_limited"
        assert "Retry-After" in resp
    assert SandboxMessage.objects.count() == 3 and set(OtpRecord.objects.values_list("sends", flat=True)) == {1}


def test_resends_count_against_the_key_limit(sandbox, settings, travel):
    settings.OTP_SENDS_PER_KEY_PER_MINUTE, settings.OTP_SENDS_PER_RECIPIENT = 2, 10
    settings.OTP_RESEND_COOLDOWN_SECONDS = 0
    travel(61 - time.time() % 60)  # the clock stands at a minute's first second: the key's window holds every send
    client, _ = sandbox
    record_id = send(client).json()["id"]
    assert client.post("/api/v1/otp/resend", {"id": record_id}, format="json").status_code == 200
    resp = client.post("/api/v1/otp/resend", {"id": record_id}, format="json")
    assert resp.status_code == 429 and resp.json()["error"]["code"] == "rate_limited"
    assert OtpRecord.objects.get().sends == 2 and SandboxMessage.objects.count() == 2


@pytest.mark.parametrize("spelling", ["idn@xn--bcher-kva.example", "IDN@BÜCHER.example", "idn@xn--BCHER-kva.Example"])
def test_one_mailbox_is_one_recipient_however_its_domain_is_spelled(sandbox, settings, spelling):
    settings.OTP_SENDS_PER_RECIPIENT_WINDOW = 10**9  # no window ends between the sends
    client, _ = sandbox
    for _ in range(settings.OTP_SENDS_PER_RECIPIENT):
        assert send(client, recipient="idn@bücher.example").status_code == 201
    resp = send(client, recipient=spelling)
    assert resp.status_code == 429 and resp.json()["error"]["code"] == "recipient_rate_limited"
    assert set(OtpRecord.objects.values_list("recipient", flat=True)) == {"idn@xn--bcher-kva.example"}


def test_the_failed_codes_block_holds_for_every_spelling_of_a_mailbox(sandbox, settings):
    settings.OTP_FAILED_RECORDS_PER_RECIPIENT, settings.OTP_SENDS_PER_RECIPIENT = 1, 10
    client, _ = sandbox
    record_id = send(client, recipient="idn@bücher.example").json()["id"]
    OtpRecord.objects.filter(pk=record_id).update(status="failed")
    resp = send(client, recipient="idn@xn--bcher-kva.example")
    assert resp.status_code == 429 and resp.json()["error"]["code"] == "recipient_blocked"


@pytest.mark.parametrize("recipient", ["idn@bü cher.example", "idn@xn--.example", "idn@-bücher.example"])
def test_an_email_domain_that_is_no_domain_name_is_400(sandbox, recipient):
    client, _ = sandbox
    resp = send(client, recipient=recipient)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_recipient"


# Number types -------------------------------------------------------------------------------

@pytest.mark.parametrize("recipient, kind", [
    ("+19002221234", "premium_rate"),  # US 900
    ("+33899123456", "premium_rate"),  # FR 089
    ("+33810123456", "shared_cost"),  # FR 081
    ("+881612345678", "satellite"),  # Iridium: phonenumbers says MOBILE, in the satellite code +881
    ("+870773111632", "satellite"),  # Inmarsat
    ("+447010000000", "personal_number"),  # UK 070
    ("+445512345678", "uan"),  # UK 055
])
def test_number_types_that_carriers_block_are_refused(sandbox, recipient, kind):
    client, _ = sandbox
    resp = send(client, recipient=recipient, channel="sms")
    assert resp.status_code == 422
    error = resp.json()["error"]
    assert error["code"] == "recipient_not_allowed" and kind in error["message"]
    assert OtpRecord.objects.count() == 0


def test_staff_allow_a_number_type_for_one_key_in_the_admin(sandbox, key_client, client):
    from django.contrib.admin.utils import quote
    from django.urls import reverse

    from tests.factories import SuperuserFactory

    api_client, key = sandbox
    other_client, _ = key_client("test")
    client.force_login(SuperuserFactory(email="staff@example.com"))
    url = reverse("admin:otp_app_apikey_change", args=[quote(key.pk)])
    resp = client.post(url, {"name": key.name, "allowed_number_types": ["premium_rate"]})
    assert resp.status_code == 302
    key.refresh_from_db()
    assert key.allowed_number_types == ["premium_rate"]
    assert send(api_client, recipient="+19002221234", channel="sms").status_code == 201
    assert send(api_client, recipient="+881612345678", channel="sms").status_code == 422  # satellite still refused
    assert send(other_client, recipient="+19002221234", channel="sms").status_code == 422
