"""Live delivery through the providers' wire formats, against local servers; charging and fallback."""
import base64
import json
import re
import socket
from urllib.parse import parse_qs, urlencode

import pytest
from werkzeug.wrappers import Response as WzResponse

from otp_app.channels.twilio_sms import twilio_signature
from otp_app.models import Balance, Charge, Delivery, OtpRecord, SandboxMessage
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import BalanceFactory

pytestmark = pytest.mark.django_db
ACCOUNT = "AC0123456789abcdef0123456789abcdef"
MESSAGES_PATH = f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json"
WA_PATH = "/v21.0/1098765/messages"


@pytest.fixture
def providers(settings, httpserver):
    settings.TWILIO_BASE_URL = httpserver.url_for("/")
    settings.TWILIO_ACCOUNT_SID = ACCOUNT
    settings.TWILIO_AUTH_TOKEN = "twilio-secret"
    settings.TWILIO_FROM = "+15005550006"
    settings.WHATSAPP_BASE_URL = httpserver.url_for("/")
    settings.WHATSAPP_PHONE_NUMBER_ID = "1098765"
    settings.WHATSAPP_ACCESS_TOKEN = "wa-token"
    settings.OTP_PUBLIC_BASE_URL = "https://otp.example.com"
    return httpserver


@pytest.fixture
def live(key_client, funded):
    return key_client("live")


def twilio_ok(request):
    form = parse_qs(request.get_data(as_text=True))
    return WzResponse(json.dumps({"sid": "SM" + "1" * 32, "status": "queued", "to": form["To"][0]}), status=201,
                      content_type="application/json")


def test_sms_goes_to_twilio_in_its_format_and_is_charged_once(providers, live, settings):
    client, _ = live
    providers.expect_oneshot_request(MESSAGES_PATH, method="POST").respond_with_handler(twilio_ok)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "fr", "channel": "sms"}, format="json")
    assert resp.status_code == 201
    request, _ = providers.log[0]
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(f"{ACCOUNT}:twilio-secret".encode()).decode()
    assert request.headers["Content-Type"].startswith("application/x-www-form-urlencoded")
    form = {k: v[0] for k, v in parse_qs(request.get_data(as_text=True)).items()}
    assert form["To"] == PHONE and form["From"] == "+15005550006"
    assert re.fullmatch(r"Votre code de vérification est \d{6}\. Il expire dans 10 minutes\. Ne le partagez pas\.",
                        form["Body"])
    assert form["StatusCallback"] == "https://otp.example.com/api/v1/callbacks/twilio"
    delivery = Delivery.objects.get()
    assert delivery.status == "sent" and delivery.provider_message_id == "SM" + "1" * 32
    assert Balance.objects.get().amount == 1000 - settings.OTP_PRICES["sms"]
    assert Charge.objects.count() == 1
    assert SandboxMessage.objects.count() == 0
    balance = client.get("/api/v1/balance").json()
    assert balance == {"currency": "USD", "balance": 1000 - settings.OTP_PRICES["sms"], "mode": "live",
                       "consumption": {"sms": {"messages": 1, "amount": settings.OTP_PRICES["sms"]}}}


def test_whatsapp_sends_the_authentication_template(providers, live):
    client, _ = live
    providers.expect_oneshot_request(WA_PATH, method="POST").respond_with_json(
        {"messaging_product": "whatsapp", "messages": [{"id": "wamid.ABC"}]})
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "pt", "channel": "whatsapp"}, format="json")
    assert resp.status_code == 201
    request, _ = providers.log[0]
    assert request.headers["Authorization"] == "Bearer wa-token"
    payload = request.get_json()
    assert payload["to"] == PHONE.lstrip("+") and payload["type"] == "template"
    template = payload["template"]
    assert template["language"] == {"code": "pt"}
    body, button = template["components"]
    code = body["parameters"][0]["text"]
    assert re.fullmatch(r"\d{6}", code)
    assert button["sub_type"] == "url" and button["parameters"][0]["text"] == code
    assert Delivery.objects.get().provider_message_id == "wamid.ABC"


def test_routing_falls_back_to_sms_when_whatsapp_refuses(providers, live, settings):
    client, _ = live
    providers.expect_oneshot_request(WA_PATH, method="POST").respond_with_json(
        {"error": {"message": "(#131026) Message undeliverable", "code": 131026}}, status=400)
    providers.expect_oneshot_request(MESSAGES_PATH, method="POST").respond_with_handler(twilio_ok)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "locale": "en"}, format="json")
    assert resp.status_code == 201
    assert resp.json()["channel"] == "whatsapp"  # routing picked WhatsApp first
    status = client.get(f"/api/v1/otp/{resp.json()['id']}").json()
    assert status["channel"] == "sms" and status["status"] == "sent"
    assert [(d["channel"], d["status"]) for d in status["delivery"]] == [("whatsapp", "failed"), ("sms", "sent")]
    assert "131026" in status["delivery"][0]["error"]
    assert list(Charge.objects.values_list("channel", flat=True)) == ["sms"]  # the refused attempt costs nothing


def test_transient_errors_are_retried_before_falling_back(providers, live, settings):
    settings.OTP_DELIVERY_RETRIES = 1
    client, _ = live
    providers.expect_oneshot_request(MESSAGES_PATH, method="POST").respond_with_data("busy", status=503)
    providers.expect_oneshot_request(MESSAGES_PATH, method="POST").respond_with_handler(twilio_ok)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    assert resp.status_code == 201
    delivery = Delivery.objects.get()
    assert delivery.status == "sent" and delivery.tries == 2


def test_every_channel_failing_makes_the_record_undeliverable(providers, live):
    client, _ = live
    providers.expect_request(WA_PATH, method="POST").respond_with_json({"error": {"message": "bad"}}, status=400)
    providers.expect_request(MESSAGES_PATH, method="POST").respond_with_json(
        {"code": 21211, "message": "Invalid 'To' Phone Number"}, status=400)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    record = OtpRecord.objects.get(pk=resp.json()["id"])
    assert record.status == "undeliverable"
    assert Charge.objects.count() == 0
    verify = client.post("/api/v1/otp/verify", {"id": record.pk, "code": "123456"}, format="json")
    assert verify.status_code == 409


def test_unconfigured_channel_is_never_picked(live, settings):
    client, _ = live  # no provider credentials in settings
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert resp.status_code == 422
    assert resp.json()["error"]["code"] == "no_channel_available"
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    assert resp.json()["error"]["code"] == "channel_not_configured"
    assert OtpRecord.objects.count() == 0


def test_send_that_would_overdraw_is_402_and_changes_nothing(providers, key_client, workspace):
    BalanceFactory(workspace=workspace, amount=10)
    client, _ = key_client("live")
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    assert resp.status_code == 402
    assert resp.json()["error"]["code"] == "insufficient_balance"
    assert OtpRecord.objects.count() == 0 and len(providers.log) == 0
    assert Balance.objects.get().amount == 10


def test_test_keys_never_charge_or_call_providers(providers, sandbox, funded):
    client, _ = sandbox
    client.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    assert len(providers.log) == 0
    assert Balance.objects.get().amount == 1000
    assert client.get("/api/v1/balance").json()["consumption"] == {"sms": {"messages": 1, "amount": 0}}


def test_twilio_status_callback_updates_delivery_when_signed(providers, live, api):
    client, _ = live
    providers.expect_oneshot_request(MESSAGES_PATH, method="POST").respond_with_handler(twilio_ok)
    client.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    params = {"MessageSid": "SM" + "1" * 32, "MessageStatus": "delivered", "AccountSid": ACCOUNT}
    form = "application/x-www-form-urlencoded"
    bad = api.post("/api/v1/callbacks/twilio", urlencode(params), content_type=form, HTTP_X_TWILIO_SIGNATURE="forged")
    assert bad.status_code == 401
    assert Delivery.objects.get().status == "sent"
    signature = twilio_signature("https://otp.example.com/api/v1/callbacks/twilio", params, "twilio-secret")
    ok = api.post("/api/v1/callbacks/twilio", urlencode(params), content_type=form, HTTP_X_TWILIO_SIGNATURE=signature)
    assert ok.status_code == 204
    assert Delivery.objects.get().status == "delivered"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_email_goes_through_smtp_localized(live, settings):
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message as MessageHandler

    received = []

    class Capture(MessageHandler):
        def handle_message(self, message):
            received.append(message)

    port = _free_port()
    controller = Controller(Capture(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
        settings.OTP_EMAIL_ENABLED = True
        client, _ = live
        resp = client.post("/api/v1/otp/send", {"recipient": "Kunde@Example.com", "locale": "de"}, format="json")
        assert resp.status_code == 201 and resp.json()["channel"] == "email"
    finally:
        controller.stop()
    assert len(received) == 1
    mail = received[0]
    assert mail["To"] == "kunde@example.com" and mail["From"] == settings.OTP_EMAIL_FROM
    assert mail["Subject"] == "Ihr Bestätigungscode" or "Best" in str(mail["Subject"])
    text = mail.get_payload(decode=True).decode()
    assert re.search(r"Ihr Bestätigungscode lautet \d{6}\. Er läuft in 10 Minuten ab\.", text)
    assert Charge.objects.get().channel == "email"
    assert Delivery.objects.get().provider_message_id == mail["Message-ID"]  # the mail's own, one per code
    assert mail["Message-ID"].endswith("@" + settings.OTP_EMAIL_FROM.rpartition("@")[2].rstrip(">") + ">")
