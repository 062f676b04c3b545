"""Public directory pages (server-rendered, no JavaScript needed): home, search, region map, facility."""
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from config.errors import NotFound
from warehouse_app.pages.forms import QuoteForm
from warehouse_app.pages.maps import outline_svg_path, region_map
from warehouse_app.services import directory, selectors


def _page(request, queryset, per_page=25):
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def home(request):
    return render(request, "warehouse_app/home.html", {
        "section": "directory", "regions": directory.regions(), "types": directory.facility_types(),
        "total": directory.dataset_totals()["facilities"], "cities": directory.cities()[:30],
    })


def search(request, **fixed):
    """The search form and browsing by region / city / type / operator share one view; a region page also
    draws the outlines of all its facilities together."""
    params = request.GET.copy()
    for key, value in fixed.items():
        params[key] = value
    queryset, unapplied = directory.facilities_search(params)
    page = _page(request, queryset)
    query = {k: v for k, v in params.items() if k != "page" and k not in fixed}
    context = {
        "section": "search" if not fixed else "directory", "page": page, "unapplied": unapplied, "params": params, "fixed": fixed, "query": urlencode(query),
        "types": directory.facility_types(), "regions": directory.regions(),
    }
    if "region" in fixed:
        facilities = selectors.region_outlines(region=fixed["region"])
        context["map"] = region_map(facilities)
        context["map_limited"] = len(facilities) >= selectors.REGION_MAP_LIMIT
    return render(request, "warehouse_app/search.html", context)


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
