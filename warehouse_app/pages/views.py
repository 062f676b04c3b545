"""Public directory pages (server-rendered, no JavaScript needed)."""
import math
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from warehouse_app.models import Facility
from warehouse_app.services import directory


def _page(request, queryset, per_page=25):
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def home(request):
    return render(request, "warehouse_app/home.html", {
        "regions": directory.regions(), "types": directory.facility_types(),
        "total": directory.active().count(), "cities": directory.cities()[:30],
    })


def search(request, **fixed):
    """The search form and browsing by region / city / type / operator share one view."""
    params = request.GET.copy()
    for key, value in fixed.items():
        params[key] = value
    queryset, unapplied = directory.facilities_search(params)
    page = _page(request, queryset)
    query = {k: v for k, v in params.items() if k != "page" and k not in fixed}
    return render(request, "warehouse_app/search.html", {
        "page": page, "unapplied": unapplied, "params": params, "fixed": fixed, "query": urlencode(query),
        "types": directory.facility_types(), "regions": directory.regions(),
    })


def outline_svg_path(outline: dict, size: int = 320, pad: int = 10) -> tuple[str, int, int]:
    """An SVG path of a GeoJSON (Multi)Polygon, in a local projection scaled to the box."""
    polygons = outline.get("coordinates", [])
    if outline.get("type") == "Polygon":
        polygons = [polygons]
    points = [pt for poly in polygons for ring in poly for pt in ring]
    if not points:
        return "", size, size
    lat0 = sum(p[1] for p in points) / len(points)
    kx = math.cos(math.radians(lat0))
    xs, ys = [p[0] * kx for p in points], [p[1] for p in points]
    span = max(max(xs) - min(xs), max(ys) - min(ys)) or 1e-9
    scale = (size - 2 * pad) / span
    width = round((max(xs) - min(xs)) * scale + 2 * pad)
    height = round((max(ys) - min(ys)) * scale + 2 * pad)

    def xy(p):
        return f"{(p[0] * kx - min(xs)) * scale + pad:.1f},{(max(ys) - p[1]) * scale + pad:.1f}"

    d = " ".join("M" + " L".join(xy(p) for p in ring) + " Z" for poly in polygons for ring in poly)
    return d, width, height


def facility(request, slug):
    obj = Facility.objects.filter(slug=slug).first()
    if obj is None:
        raise Http404
    path, width, height = outline_svg_path(obj.outline)
    return render(request, "warehouse_app/facility.html", {"f": obj, "svg_path": path, "svg_w": width, "svg_h": height})
