"""Directory pages kept whole for visitors who carry no cookie but the CSRF one.

Such a visitor sees what every such visitor sees until the directory changes: the page is rendered once per process
with a slot where the visitor's CSRF token goes (`csrf_slot`, a context processor) and kept by its path and query
string with the searches it shows (`directory.visitor_pages`, dropped with them). Each request gets the kept bytes
with its own token, the cookie that goes with it and the same headers as a rendered page. Anyone else (signed in,
a pending message, a warehouse session) gets the page rendered. Design and figures: docs/performance.md.
"""
from functools import wraps

from django.conf import settings
from django.http import HttpResponse
from django.middleware.csrf import get_token

from config.local_cache import MISSING
from warehouse_app.services import directory

CSRF_SLOT = "kept-page-csrf-slot"  # letters and dashes: written as is wherever the template writes the token


def csrf_slot(request) -> dict:
    """Context processor, after Django's `csrf`: the slot instead of a token while a kept page is rendered."""
    return {"csrf_token": CSRF_SLOT} if getattr(request, "rendering_kept_page", False) else {}


def _plain_visitor(request) -> bool:
    return (request.method in ("GET", "HEAD") and set(request.COOKIES) <= {settings.CSRF_COOKIE_NAME}
            and not request.user.is_authenticated)  # as the rendered page asks (the session is read: Vary: Cookie)


def kept_for_visitors(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not _plain_visitor(request):
            return view(request, *args, **kwargs)
        key = (request.path, request.META.get("QUERY_STRING", ""))
        kept = directory.visitor_pages.get(key)
        if kept is MISSING:
            generation = directory.visitor_pages.generation
            request.rendering_kept_page = True
            try:
                response = view(request, *args, **kwargs)
            finally:  # an error page rendered next gets a real token
                request.rendering_kept_page = False
            if response.status_code != 200 or response.streaming:
                return response
            kept = (response["Content-Type"], tuple(response.content.split(CSRF_SLOT.encode())))
            directory.visitor_pages.set(key, kept, size=sum(map(len, kept[1])) + len(key[0]) + len(key[1]) + 200,
                                        generation=generation)
        content_type, parts = kept
        return HttpResponse(get_token(request).encode().join(parts), content_type=content_type)

    return wrapper
