"""Public directory pages (server-rendered, no JavaScript needed): home, search, region map, facility."""
import re
from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.cache import get_conditional_response
from django.views.decorators.clickjacking import xframe_options_sameorigin

from config.errors import NotFound
from config.inputs import ascii_int
from warehouse_app.pages.forms import QuoteForm
from warehouse_app.pages.kept import kept_for_visitors
from warehouse_app.services import directory, region_maps, selectors
from warehouse_app.services.maps import outline_svg_path


SEARCH_PAGE_SIZE = 25


@kept_for_visitors
def home(request):
    return render(request, "warehouse_app/home.html", {
        "section": "directory", "regions": directory.regions(), "types": directory.facility_types(),
        "total": directory.dataset_totals()["facilities"], "cities": directory.cities()[:30],
    })


def _page_number(request) -> int:
    """The page asked for; anything but a page number reads as the first, as Django's paginator would. A page
    number above MAX_PAGE, however many digits it has, is past the end (404), as is any past the last page."""
    raw = request.GET.get("page", "")
    if not (raw.isascii() and raw.isdigit()):
        return 1
    value = ascii_int(raw, max_digits=len(str(directory.MAX_PAGE)))
    if value is None or value > directory.MAX_PAGE:
        raise Http404(f"Page {raw[:20]}{'...' if len(raw) > 20 else ''} is past the end.")
    return value or 1


@kept_for_visitors
def search(request, **fixed):
    """The search form and browsing by region / city / type / operator share one view; a region page also
    draws the outlines of its largest facilities together. The page comes from the API's search service: the same
    indexes, bounded count and kept pages (docs/performance.md, "Warehouse search")."""
    params = request.GET.copy()
    for key, value in fixed.items():
        params[key] = value
    try:
        page, unapplied = directory.facilities_search_page(params=params, page=_page_number(request),
                                                           page_size=SEARCH_PAGE_SIZE)
    except NotFound as exc:  # past the last page
        raise Http404(str(exc))
    query = {k: v for k, v in params.items() if k != "page" and k not in fixed}
    context = {
        "section": "search" if not fixed else "directory", "page": page, "unapplied": unapplied, "params": params, "fixed": fixed, "query": urlencode(query),
        "types": directory.facility_types(), "regions": directory.regions(),
    }
    if "region" in fixed:
        context["region_map"] = region_maps.region_map(fixed["region"])
    return render(request, "warehouse_app/search.html", context)


# The map document holds only markup and an inline <style>; only this site's pages may frame it.
REGION_MAP_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'"
ACCEPTS_GZIP = re.compile(r"\bgzip\b")


@xframe_options_sameorigin
def region_map_svg(request, region):
    """The map a region page frames: kept bytes, gzipped for the browsers that take it (all of them), revalidated
    by its ETag, which is weak so that both encodings share it."""
    document = region_maps.region_map(region)
    if document is None or not document.outlines:
        raise Http404("No outline to draw in this region.")
    gzipped = bool(ACCEPTS_GZIP.search(request.headers.get("Accept-Encoding", "")))
    headers = {"ETag": document.etag, "Cache-Control": "public, max-age=300", "Vary": "Accept-Encoding",
               "Content-Security-Policy": REGION_MAP_POLICY}
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    response = HttpResponse(document.svg_gzip if gzipped else document.svg, content_type="image/svg+xml",
                            headers=headers)
    # a 304 when the browser's copy is current, with this response's caching headers
    return get_conditional_response(request, etag=document.etag, response=response)


def facility(request, slug):
    try:
        obj = selectors.facility_by_slug(slug=slug)
    except NotFound:
        raise Http404
    path, width, height = outline_svg_path(obj.outline)
    return render(request, "warehouse_app/facility.html", {
        "section": "directory", "f": obj, "svg_path": path, "svg_w": width, "svg_h": height, "quote_form": QuoteForm(),
        "shortlisted": selectors.is_shortlisted(user=request.user, facility=obj),
    })
