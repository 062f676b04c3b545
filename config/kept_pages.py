"""Pages kept whole, with slots for what differs from one request to the next.

A kept page is rendered once with a marker where each request's own text goes (the CSRF token, through the
`csrf_slot` context processor; a signed-in page's workspace switcher), split at the markers and kept. Each request
gets the kept pieces joined with its own values: what `fill` is given for each slot. The warehouse directory keeps
its pages so for visitors (warehouse_app/pages/kept.py), the dashboard for members (platform_app/pages/kept.py).
"""
import re

from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils.safestring import mark_safe


def slot(name: str) -> str:
    """A slot's marker: written as is (safe) where a template writes the value. Text a page shows is escaped, so
    no `<` of a tenant's or visitor's text can make a marker: only the template's slots are filled."""
    return mark_safe(f"<kept-page-slot-{name}>")


CSRF_SLOT = slot("csrf")
_SLOTS = re.compile(rb"(<kept-page-slot-[a-z]+>)")


def csrf_slot(request) -> dict:
    """Context processor, after Django's `csrf`: the slot instead of a token while a kept page is rendered."""
    return {"csrf_token": CSRF_SLOT} if rendering_kept_page(request) else {}


def rendering_kept_page(request) -> bool:
    return getattr(request, "rendering_kept_page", False)


def render_kept(request, render):
    """(`render()`'s response, its kept form: content type and pieces) with slots in place of each request's own
    text; the kept form is None for an answer not to keep (not a 200, streamed, or setting a cookie of its own)."""
    request.rendering_kept_page = True
    try:
        response = render()
    finally:  # an error page rendered next gets a real token
        request.rendering_kept_page = False
    if response.status_code != 200 or response.streaming or response.cookies:
        return response, None
    return response, (response["Content-Type"], tuple(_SLOTS.split(response.content)))


def kept_size(kept) -> int:
    return sum(map(len, kept[1])) + 200


def fill(request, kept, slots: dict | None = None) -> HttpResponse:
    """The kept page with this request's values: its CSRF token (and the cookie that goes with it, as a rendered
    page sets it) and `slots[name]()` for each other slot."""
    content_type, pieces = kept
    values = {CSRF_SLOT.encode(): lambda: get_token(request)}
    values.update({slot(name).encode(): make for name, make in (slots or {}).items()})
    found = {}
    for marker in pieces[1::2]:  # split() puts each marker between the pieces around it
        if marker not in found:
            found[marker] = values[marker]().encode()
    return HttpResponse(b"".join(found.get(piece, piece) if i % 2 else piece for i, piece in enumerate(pieces)),
                        content_type=content_type)
