"""Sync and async clients: one method per route."""
from __future__ import annotations

import asyncio
import time
import uuid

import httpx

from otp_app.client.errors import error_from_response
from otp_app.client.models import Balance, OtpRecord, SandboxMessage, VerifyResult

RETRY_STATUSES = {429, 500, 502, 503, 504}


def _retry_after(resp: httpx.Response, attempt: int) -> float:
    try:
        return min(float(resp.headers.get("Retry-After", "")), 60.0)
    except ValueError:
        return min(0.5 * 2 ** attempt, 8.0)


def _result(resp: httpx.Response):
    if resp.status_code >= 400:
        try:
            body = resp.json()
        except ValueError:
            body = None
        raise error_from_response(resp.status_code, body, _retry_after(resp, 0) if resp.status_code == 429 else None)
    return resp.json()


def _send_body(recipient, locale, channel):
    body = {"recipient": recipient, "locale": locale}
    if channel is not None:
        body["channel"] = channel
    return body


class _Base:
    def __init__(self, api_key: str, base_url: str = "http://localhost:8000", *, max_retries: int = 3,
                 timeout: float = 10.0, retry_cooldowns: bool = False):
        self.base_url = base_url.rstrip("/") + "/api/v1"
        self.headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self.max_retries = max_retries
        self.timeout = timeout
        # a resend cooldown is the caller's decision to wait, not a transient error
        self.retry_cooldowns = retry_cooldowns

    def _should_retry(self, resp: httpx.Response, attempt: int) -> bool:
        if resp.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return False
        if resp.status_code == 429 and not self.retry_cooldowns:
            try:
                code = resp.json()["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = ""
            return code == "rate_limited"
        return True


class OtpClient(_Base):
    """Blocking client."""

    def __init__(self, *args, transport: httpx.BaseTransport | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=self.timeout,
                                  transport=transport)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._http.close()

    def _request(self, method: str, path: str, **kwargs):
        attempt = 0
        while True:
            resp = self._http.request(method, path, **kwargs)
            if not self._should_retry(resp, attempt):
                return _result(resp)
            time.sleep(_retry_after(resp, attempt))
            attempt += 1

    def send(self, *, recipient: str, locale: str = "en", channel: str | None = None,
             idempotency_key: str | None = None) -> OtpRecord:
        key = idempotency_key or str(uuid.uuid4())  # the same key on every retry: one delivery at most
        return OtpRecord.from_json(self._request("POST", "/otp/send", json=_send_body(recipient, locale, channel),
                                                 headers={"idempotency-key": key}))

    def verify(self, *, id: str, code: str) -> VerifyResult:
        return VerifyResult.from_json(self._request("POST", "/otp/verify", json={"id": id, "code": code}))

    def resend(self, *, id: str, channel: str | None = None) -> OtpRecord:
        body = {"id": id, **({"channel": channel} if channel else {})}
        return OtpRecord.from_json(self._request("POST", "/otp/resend", json=body))

    def status(self, id: str) -> OtpRecord:
        return OtpRecord.from_json(self._request("GET", f"/otp/{id}"))

    def balance(self) -> Balance:
        return Balance.from_json(self._request("GET", "/balance"))

    def sandbox_messages(self) -> list[SandboxMessage]:
        return [SandboxMessage.from_json(m) for m in self._request("GET", "/sandbox/messages")["results"]]


class AsyncOtpClient(_Base):
    """asyncio client with the same methods."""

    def __init__(self, *args, transport: httpx.AsyncBaseTransport | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self.headers, timeout=self.timeout,
                                       transport=transport)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    async def aclose(self):
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs):
        attempt = 0
        while True:
            resp = await self._http.request(method, path, **kwargs)
            if not self._should_retry(resp, attempt):
                return _result(resp)
            await asyncio.sleep(_retry_after(resp, attempt))
            attempt += 1

    async def send(self, *, recipient: str, locale: str = "en", channel: str | None = None,
                   idempotency_key: str | None = None) -> OtpRecord:
        key = idempotency_key or str(uuid.uuid4())
        return OtpRecord.from_json(await self._request("POST", "/otp/send", json=_send_body(recipient, locale, channel),
                                                       headers={"idempotency-key": key}))

    async def verify(self, *, id: str, code: str) -> VerifyResult:
        return VerifyResult.from_json(await self._request("POST", "/otp/verify", json={"id": id, "code": code}))

    async def resend(self, *, id: str, channel: str | None = None) -> OtpRecord:
        body = {"id": id, **({"channel": channel} if channel else {})}
        return OtpRecord.from_json(await self._request("POST", "/otp/resend", json=body))

    async def status(self, id: str) -> OtpRecord:
        return OtpRecord.from_json(await self._request("GET", f"/otp/{id}"))

    async def balance(self) -> Balance:
        return Balance.from_json(await self._request("GET", "/balance"))

    async def sandbox_messages(self) -> list[SandboxMessage]:
        return [SandboxMessage.from_json(m) for m in (await self._request("GET", "/sandbox/messages"))["results"]]
