"""One error type for business rules, one DRF handler for every API.

Services raise `ApplicationError` (or a subclass); DRF and Django exceptions are
converted to the same (status, code, message, details) tuple; the body is then
shaped for the service that owns the URL (contract.md):

- platform `/health`, `/v1/...`: {"code", "message", "details", "status"}
- OTP `/api/v1/...`:              {"error": {"code", "message"}}
- warehouse `/api/...`:           {"error": "<message>", "code", ...extra}
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.db.models import ProtectedError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response


class ApplicationError(Exception):
    status = 400
    code = "bad_request"
    default_message = "The request cannot be processed."

    def __init__(self, message: str | None = None, *, code: str | None = None, status: int | None = None,
                 details: dict | None = None, headers: dict | None = None, extra: dict | None = None):
        self.message = message or self.default_message
        self.code = code or self.code
        self.status = status or self.status
        self.details = details
        self.headers = headers or {}
        self.extra = extra or {}
        super().__init__(self.message)


class ValidationFailed(ApplicationError):
    status, code, default_message = 400, "validation_error", "The request is invalid."


class Unauthenticated(ApplicationError):
    status, code, default_message = 401, "unauthenticated", "Authentication credentials were not provided or are invalid."


class Forbidden(ApplicationError):
    status, code, default_message = 403, "forbidden", "Your role does not allow this action."


class NotFound(ApplicationError):
    status, code, default_message = 404, "not_found", "Not found."


class Conflict(ApplicationError):
    status, code, default_message = 409, "conflict", "The request conflicts with the current state."


class RateLimited(ApplicationError):
    status, code, default_message = 429, "rate_limited", "Too many requests."

    def __init__(self, message=None, *, retry_after: int, **kwargs):
        kwargs.setdefault("headers", {})["Retry-After"] = str(max(1, int(retry_after)))
        kwargs.setdefault("details", {"retryAfter": max(1, int(retry_after))})
        super().__init__(message, **kwargs)


class PayloadTooLarge(ApplicationError):
    status, code = 413, "payload_too_large"

    def __init__(self, limit: int):
        super().__init__(f"The request body is larger than this route accepts ({limit} bytes).",
                         details={"maxBytes": limit}, extra={"max_bytes": limit})


class ServiceUnavailable(ApplicationError):
    status, code, default_message = 503, "service_unavailable", "The service is not available."


# Service detection ---------------------------------------------------------

def service_for_path(path: str) -> str:
    if path.startswith("/api/v1/") or path == "/api/v1":
        return "otp"
    if path.startswith("/api/") or path == "/api":
        return "warehouse"
    return "platform"


def error_body(service: str, status: int, code: str, message: str, details=None, extra=None) -> dict:
    if service == "otp":
        return {"error": {"code": code, "message": message}}
    if service == "warehouse":
        return {"error": message, "code": code, **(extra or {})}
    return {"code": code, "message": message, "details": details, "status": status}


def error_response(request, status: int, code: str, message: str, details=None, headers=None,
                   extra=None) -> JsonResponse:
    """A plain Django JSON error, for views and handlers outside DRF."""
    resp = JsonResponse(error_body(service_for_path(request.path), status, code, message, details, extra),
                        status=status)
    for k, v in (headers or {}).items():
        resp[k] = v
    return resp


# DRF handler -----------------------------------------------------------------

def _flatten(detail) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_flatten(v)}" for k, v in detail.items())
    if isinstance(detail, list):
        return " ".join(_flatten(v) for v in detail)
    return str(detail)


def _plain(detail):
    if isinstance(detail, dict):
        return {k: _plain(v) for k, v in detail.items()}
    if isinstance(detail, list):
        return [_plain(v) for v in detail]
    return str(detail)


def classify(exc) -> ApplicationError | None:
    """Turn any known exception into an ApplicationError; None for the unknown."""
    if isinstance(exc, ApplicationError):
        return exc
    if isinstance(exc, Http404):
        return NotFound()
    if isinstance(exc, OperationalError | InterfaceError):  # the database is unreachable or overloaded
        import logging

        logging.getLogger("config.errors").warning("database unavailable: %s", exc)
        return ServiceUnavailable("The database is not available; try again shortly.", code="database_unavailable",
                                  headers={"Retry-After": "5"})
    if isinstance(exc, RequestDataTooBig):  # a body read past DATA_UPLOAD_MAX_MEMORY_SIZE (chunked, or a form)
        return PayloadTooLarge(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if isinstance(exc, SuspiciousOperation):  # too many form fields or files, a malformed request
        return ApplicationError("The request cannot be processed.", code="bad_request")
    if isinstance(exc, DjangoPermissionDenied):
        return Forbidden()
    if isinstance(exc, ProtectedError):
        return Conflict("The object is still referenced by other objects.")
    if isinstance(exc, DjangoValidationError):
        details = exc.message_dict if hasattr(exc, "error_dict") else {"nonFieldErrors": exc.messages}
        return ValidationFailed(_flatten(details), details=details)
    if isinstance(exc, drf.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return ValidationFailed(_flatten(detail), details=_plain(detail))
    if isinstance(exc, drf.ParseError):
        return ValidationFailed(f"Malformed request body: {exc.detail}", code="malformed_json")
    if isinstance(exc, drf.UnsupportedMediaType):
        return ApplicationError(str(exc.detail), code="unsupported_media_type", status=415)
    if isinstance(exc, drf.AuthenticationFailed | drf.NotAuthenticated):
        return Unauthenticated(str(exc.detail) if isinstance(exc, drf.AuthenticationFailed) else None)
    if isinstance(exc, drf.PermissionDenied):
        return Forbidden(str(exc.detail))
    if isinstance(exc, drf.NotFound):
        return NotFound()
    if isinstance(exc, drf.MethodNotAllowed):
        return ApplicationError(str(exc.detail), code="method_not_allowed", status=405)
    if isinstance(exc, drf.NotAcceptable):
        return ApplicationError(str(exc.detail), code="not_acceptable", status=406)
    if isinstance(exc, drf.Throttled):
        return RateLimited(retry_after=int(exc.wait or 1))
    if isinstance(exc, drf.APIException):
        return ApplicationError(str(exc.detail), code=getattr(exc, "default_code", "error"), status=exc.status_code)
    return None


def exception_handler(exc, context):
    err = classify(exc)
    if err is None:
        return None  # a real bug: let Django log it and answer 500
    request = context.get("request")
    service = service_for_path(request.path if request is not None else "/")
    body = error_body(service, err.status, err.code, err.message, err.details, err.extra)
    headers = dict(err.headers)
    if err.status == 401 and service == "platform":
        headers.setdefault("WWW-Authenticate", 'Bearer realm="api"')
    return Response(body, status=err.status, headers=headers)


# Django handlers for URLs no view answered ------------------------------------

def _is_api(path: str) -> bool:
    return path.startswith(("/health", "/v1", "/api"))


def handler400(request, exception=None):
    if _is_api(request.path):
        return error_response(request, 400, "bad_request", "The request cannot be processed.")
    from django.views.defaults import bad_request

    return bad_request(request, exception)


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: a missing or wrong CSRF token on a cookie-authenticated write."""
    if _is_api(request.path):
        return error_response(request, 403, "csrf_failed", f"CSRF check failed: {reason}")
    from django.views.csrf import csrf_failure as django_csrf_failure

    return django_csrf_failure(request, reason)


def handler404(request, exception=None):
    if _is_api(request.path):
        return error_response(request, 404, "not_found", f"No route matches {request.path}.")
    from django.views.defaults import page_not_found

    return page_not_found(request, exception, template_name="404.html")


def handler500(request):
    if _is_api(request.path):
        return error_response(request, 500, "internal_error", "An unexpected error occurred.")
    from django.views.defaults import server_error

    return server_error(request)
