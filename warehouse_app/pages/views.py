"""Public directory pages (server-rendered, no JavaScript needed): home, search, region map, facility."""
from urllib.parse import urlencode

from django.http import Http404
from django.shortcuts import render
from django.template.loader import render_to_string

from config.errors import NotFound
from warehouse_app.pages.forms import QuoteForm
from warehouse_app.pages.maps import outline_svg_path, region_map
from warehouse_app.services import directory, selectors


SEARCH_PAGE_SIZE = 25


def home(request):
    return render(request, "warehouse_app/home.html", {
        "section": "directory", "regions": directory.regions(), "types": directory.facility_types(),
        "total": directory.dataset_totals()["facilities"], "cities": directory.cities()[:30],
    })


def _page_number(request) -> int:
    """The page asked for; anything but a page number reads as the first, as Django's paginator would."""
    raw = request.GET.get("page", "")
    return int(raw) if raw.isascii() and raw.isdigit() and 0 < int(raw) <= directory.MAX_PAGE else 1


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
        context["region_map"] = _region_map_markup(fixed["region"])
    return render(request, "warehouse_app/search.html", context)


def _region_map_markup(region: str) -> str:
    """The region's largest outlines drawn together. Building it reads, projects and links up to
    REGION_MAP_LIMIT outlines (about 0.5 s of CPU), so each process renders it once and keeps the markup until
    the directory changes."""
    def render_map():
        facilities = selectors.region_outlines(region=region)
        return render_to_string("warehouse_app/_region_map.html", {
            "map": region_map(facilities), "region": region,
            "map_limited": len(facilities) >= selectors.REGION_MAP_LIMIT})

    return directory.region_maps.get_or_compute(region, render_map, size=lambda markup: len(markup) + 100)


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
