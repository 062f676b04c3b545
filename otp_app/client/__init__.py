"""Typed Python client of the one-time-code API (sync and async, on httpx).

    from otp_app.client import OtpClient
    with OtpClient(api_key="svc_test_...", base_url="http://localhost:8000") as otp:
        record = otp.send(recipient="+14155550123", locale="en")
        result = otp.verify(id=record.id, code="123456")

Retries 429 and 5xx answers (honouring Retry-After) and sends an idempotency key with every
send, so a retried send never delivers twice. Errors are raised as typed `OtpError` subclasses.
"""
from otp_app.client.client import AsyncOtpClient, OtpClient
from otp_app.client.errors import (AttemptsExhausted, AuthenticationError, CodeExpired, IdempotencyConflict,
                                   InsufficientBalance, NotFoundError, OtpError, RateLimitedError, ValidationError)
from otp_app.client.models import Balance, ChannelConsumption, Delivery, OtpRecord, SandboxMessage, VerifyResult

__all__ = [
    "OtpClient", "AsyncOtpClient", "OtpRecord", "Delivery", "VerifyResult", "Balance", "ChannelConsumption",
    "SandboxMessage", "OtpError", "AuthenticationError", "ValidationError", "NotFoundError", "CodeExpired",
    "AttemptsExhausted", "IdempotencyConflict", "InsufficientBalance", "RateLimitedError",
]
