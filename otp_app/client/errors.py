"""Typed errors: one class per family of the API's error codes."""
from __future__ import annotations


class OtpError(Exception):
    """Any error answer of the API: `status`, `code` and `message` as the API sent them."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


class AuthenticationError(OtpError): ...
class ValidationError(OtpError): ...
class NotFoundError(OtpError): ...
class CodeExpired(OtpError): ...
class AttemptsExhausted(OtpError): ...
class IdempotencyConflict(OtpError): ...
class InsufficientBalance(OtpError): ...
class RateLimitedError(OtpError): ...


_BY_CODE = {"otp_expired": CodeExpired, "otp_attempts_exhausted": AttemptsExhausted,
            "idempotency_conflict": IdempotencyConflict, "insufficient_balance": InsufficientBalance}
_BY_STATUS = {400: ValidationError, 401: AuthenticationError, 402: InsufficientBalance, 404: NotFoundError,
              429: RateLimitedError}


def error_from_response(status: int, body: dict | None, retry_after: float | None) -> OtpError:
    err = (body or {}).get("error") or {}
    code = err.get("code", "error") if isinstance(err, dict) else "error"
    message = err.get("message", "") if isinstance(err, dict) else str(err)
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or OtpError
    return cls(status, code, message, retry_after)
