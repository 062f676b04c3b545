"""Request guards and error shaping for every URL (docs/architecture.md, "Input limits").

- `RequestGuardMiddleware` (before the edge): refuses bytes the database cannot hold and bodies over the
  route's limit before any view or lookup sees them.
- `LazyMessageMiddleware`: Django's messages, opened only by a request that reads or adds one.
- `ApplicationErrorMiddleware` (innermost): turns an ApplicationError escaping a plain Django view (pages,
  SSE, edge) into the service's JSON error under API prefixes or an HTML page elsewhere, and keeps Django's
  own 404/405 answers under API prefixes in the service's shape (also with DEBUG on).
"""
import io

from django.conf import settings
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.messages.storage import default_storage
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpResponseNotAllowed
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject, empty

from config.errors import (ApplicationError, PayloadTooLarge, ValidationFailed, _is_api, classify,
                           error_response)
from config.parsers import request_body_limit

_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
_BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def refuse(request, error: ApplicationError):
    """The service's JSON error under API prefixes, the error page elsewhere."""
    if _is_api(request.path):
        return error_response(request, error.status, error.code, error.message, error.details, error.headers,
                              error.extra)
    template = "404.html" if error.status == 404 else "error.html"
    response = render(request, template, {"error": error}, status=error.status)
    for key, value in error.headers.items():
        response[key] = value
    return response


def _nul(field: str, name: str) -> ValidationFailed:
    message = f"{field} `{name}` contains a NUL character." if name else f"The {field} contains a NUL character."
    return ValidationFailed(message, details={name or field: ["Contains a NUL character."]})


def _nul_in_request(request) -> ValidationFailed | None:
    """NUL cannot be stored (PostgreSQL text) and has no meaning in a URL, a header or a cookie."""
    if "\x00" in request.path_info:
        return _nul("path", "")
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in v for v in values):
            return _nul("Query parameter", name.replace("\x00", ""))
    for key, value in request.META.items():
        if (key.startswith("HTTP_") or key in ("CONTENT_TYPE", "CONTENT_LENGTH")) and "\x00" in str(value):
            return _nul("Header", key.removeprefix("HTTP_").replace("_", "-").title())
    if any("\x00" in name or "\x00" in value for name, value in request.COOKIES.items()):
        return _nul("Cookie", "")
    return None


class RequestGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = _nul_in_request(request)
        if problem is not None:
            return refuse(request, problem)
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        """Before CSRF and the view read the body: its declared length, its real length, its form fields."""
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared and not (declared.isascii() and declared.isdigit()):
            return refuse(request, ValidationFailed("Content-Length is not a number.", code="bad_request"))
        view_class = getattr(view_func, "view_class", view_func)
        limit = request_body_limit(view_class)
        if declared and (len(declared) > 18 or int(declared) > limit):
            return refuse(request, PayloadTooLarge(limit))
        if f"{view_class.__module__}.{view_class.__qualname__}" in settings.REQUEST_BODY_STREAMED:
            return None  # the view reads exactly the declared length, to disk
        try:
            if request.method in _BODY_METHODS and (not declared or limit > settings.DATA_UPLOAD_MAX_MEMORY_SIZE):
                # No length (chunked, HTTP/2), or more than Django's reader takes: read the body here, once, up to
                # this route's limit, and keep it where Django keeps a body it has read; with its length DRF
                # parses it too.
                body = request.read(limit + 1)
                if len(body) > limit:
                    return refuse(request, PayloadTooLarge(limit))
                request._body, request._stream = body, io.BytesIO(body)
                request.META["CONTENT_LENGTH"] = str(len(body))
            if request.method == "POST" and request.content_type in _FORMS:
                fields = request.POST  # parsed now, so an over-size or broken form is refused here
                for name, values in fields.lists():
                    if "\x00" in name or any("\x00" in v for v in values):
                        return refuse(request, _nul("Form field", name.replace("\x00", "")))
        except RequestDataTooBig:
            return refuse(request, PayloadTooLarge(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
        except (SuspiciousOperation, MultiPartParserError) as exc:  # too many fields or files, a broken form
            return refuse(request, ValidationFailed(f"The form cannot be read: {exc}", code="bad_request"))
        return None


class LazyMessageMiddleware(MessageMiddleware):
    """Django's MessageMiddleware, with the storage made when a request first reads or adds a message. Opening it
    builds a cookie signer and a session storage on every request, the API's included, which never use them. A
    storage nobody opened has nothing to save (Django's `update` stores only messages read or added)."""

    def process_request(self, request):
        request._messages = SimpleLazyObject(lambda: default_storage(request))

    def process_response(self, request, response):
        messages = getattr(request, "_messages", None)
        if isinstance(messages, SimpleLazyObject) and messages._wrapped is empty:
            return response
        return super().process_response(request, response)


class ApplicationErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not _is_api(request.path) or response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:  # no route matched (Django's technical page when DEBUG is on)
            return error_response(request, 404, "not_found", f"No route matches {request.path}.")
        if isinstance(response, HttpResponseNotAllowed):
            return error_response(request, 405, "method_not_allowed", f"Method {request.method} is not allowed.",
                                  headers={"Allow": response["Allow"]})
        return response

    def process_exception(self, request, exception):
        if _is_api(request.path):
            error = classify(exception)
        elif isinstance(exception, RequestDataTooBig):
            error = PayloadTooLarge(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        else:
            error = exception if isinstance(exception, ApplicationError) else None
        return refuse(request, error) if error is not None else None
