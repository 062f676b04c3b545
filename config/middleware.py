"""Turns an ApplicationError escaping a plain Django view (pages, SSE, edge) into
the right response: the service's JSON error under API prefixes, an HTML page elsewhere."""
from django.shortcuts import render

from config.errors import ApplicationError, _is_api, error_response


class ApplicationErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, ApplicationError):
            return None
        if _is_api(request.path):
            return error_response(request, exception.status, exception.code, exception.message,
                                  exception.details, exception.headers)
        template = "404.html" if exception.status == 404 else "error.html"
        resp = render(request, template, {"error": exception}, status=exception.status)
        for key, value in exception.headers.items():
            resp[key] = value
        return resp
