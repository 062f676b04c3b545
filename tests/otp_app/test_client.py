"""The typed client against the live test server (and its retry rule against a local server)."""
import asyncio

import pytest

from otp_app.client import (AsyncOtpClient, AttemptsExhausted, AuthenticationError, NotFoundError, OtpClient,
                            RateLimitedError, ValidationError)
from otp_app.models import OtpRecord
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory

RAW = "svc_test_client" + "c" * 30


@pytest.fixture
def server(live_server, transactional_db, workspace):
    ApiKeyFactory(workspace=workspace, mode="test", raw=RAW)
    return live_server.url


def test_sync_client_full_flow(server):
    with OtpClient(api_key=RAW, base_url=server) as otp:
        record = otp.send(recipient=PHONE, locale="es", channel="sms")
        assert record.id.startswith("otp_") and record.status == "sent" and record.attempts_left == 5
        message = otp.sandbox_messages()[0]
        assert message.otp_id == record.id and "Caduca en 10 minutos" in message.text
        result = otp.verify(id=record.id, code=message.code)
        assert result.verified is True and result.status == "verified"
        status = otp.status(record.id)
        assert status.status == "verified" and status.delivery[0].channel == "sms"
        assert otp.balance().mode == "test"


def test_send_carries_an_idempotency_key(server):
    with OtpClient(api_key=RAW, base_url=server) as otp:
        first = otp.send(recipient=PHONE, idempotency_key="5f0a4c1e-4b8f-4a5e-9d7e-1f2a3b4c5d6e")
        again = otp.send(recipient=PHONE, idempotency_key="5f0a4c1e-4b8f-4a5e-9d7e-1f2a3b4c5d6e")
    assert first.id == again.id
    assert OtpRecord.objects.count() == 1


def test_typed_errors(server):
    with OtpClient(api_key=RAW, base_url=server) as otp:
        with pytest.raises(ValidationError) as bad:
            otp.send(recipient="12345")
        assert bad.value.code == "invalid_recipient" and bad.value.status == 400
        with pytest.raises(NotFoundError):
            otp.status("otp_nothere")
        record = otp.send(recipient=PHONE)
        code = otp.sandbox_messages()[0].code
        wrong = "000000" if code != "000000" else "111111"
        for _ in range(5):
            otp.verify(id=record.id, code=wrong)
        with pytest.raises(AttemptsExhausted):
            otp.verify(id=record.id, code=code)
        with pytest.raises(RateLimitedError) as cooldown:
            otp.resend(id=otp.send(recipient="+14155550124").id)
        assert cooldown.value.code == "resend_cooldown" and cooldown.value.retry_after > 0
    with OtpClient(api_key="svc_test_wrong", base_url=server) as otp, pytest.raises(AuthenticationError):
        otp.balance()


def test_async_client(server):
    async def flow():
        async with AsyncOtpClient(api_key=RAW, base_url=server) as otp:
            record = await otp.send(recipient=PHONE)
            code = (await otp.sandbox_messages())[0].code
            return await otp.verify(id=record.id, code=code)

    assert asyncio.run(flow()).verified is True


def test_retries_5xx_and_rate_limits_honouring_retry_after(httpserver):
    """The retry rule, against a local server answering in the API's format."""
    record = {"id": "otp_x", "channel": "sms", "status": "sent", "recipient": PHONE, "locale": "en",
              "expires_at": "2026-01-01T00:10:00Z", "attempts_left": 5}
    httpserver.expect_ordered_request("/api/v1/otp/send").respond_with_data("", status=503)
    httpserver.expect_ordered_request("/api/v1/otp/send").respond_with_json(
        {"error": {"code": "rate_limited", "message": "slow down"}}, status=429, headers={"Retry-After": "0"})
    httpserver.expect_ordered_request("/api/v1/otp/send").respond_with_json(record, status=201)
    with OtpClient(api_key=RAW, base_url=httpserver.url_for("/").rstrip("/")) as otp:
        result = otp.send(recipient=PHONE)
    assert result.id == "otp_x"
    keys = {req.headers["idempotency-key"] for req, _ in httpserver.log}
    assert len(httpserver.log) == 3 and len(keys) == 1  # every retry carries the same key
