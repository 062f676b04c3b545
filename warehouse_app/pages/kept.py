"""Directory pages kept whole for visitors who carry no cookie but the CSRF one.

Such a visitor sees what every such visitor sees until the directory changes: the page is rendered once per process
with a slot where the visitor's CSRF token goes (config/kept_pages.py) and kept by its path and query string with
the searches it shows (`directory.visitor_pages`, dropped with them). Each request gets the kept bytes with its own
token, the cookie that goes with it and the same headers as a rendered page. Anyone else (signed in, a pending
message, a warehouse session) gets the page rendered. Design and figures: docs/performance.md.
"""
from functools import wraps

from django.conf import settings

from config import kept_pages
from config.local_cache import MISSING
from warehouse_app.services import directory


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
            response, kept = kept_pages.render_kept(request, lambda: view(request, *args, **kwargs))
            if kept is None:
                return response
            directory.visitor_pages.set(key, kept, size=kept_pages.kept_size(kept) + len(key[0]) + len(key[1]),
                                        generation=generation)
        return kept_pages.fill(request, kept)

    return wrapper
