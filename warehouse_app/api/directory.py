"""Public directory routes."""
import json

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.kept_answers import keep
from warehouse_app.api.base import WarehouseView, bounded_page, errors, paged
from warehouse_app.api.serializers import FacilityDetailSerializer, FacilitySerializer, facility_item
from warehouse_app.services import directory
from warehouse_app.services.selectors import facility_by_slug, last_import, withdrawn_count

ATTRIBUTION = {"text": settings.WAREHOUSE_ATTRIBUTION, "url": settings.WAREHOUSE_ATTRIBUTION_URL,
               "license": settings.WAREHOUSE_DATA_LICENSE}
OK = OpenApiResponse(description="OK")
Attribution = inline_serializer("Attribution", {"text": serializers.CharField(), "url": serializers.URLField(),
                                                "license": serializers.CharField()})
CountIsEstimate = serializers.BooleanField(help_text=(
    "false: `count` is exact. true: more than WAREHOUSE_SEARCH_EXACT_COUNT (10,000) facilities match and `count` is "
    "the database's estimate (PostgreSQL query planner) rather than an exact count."))
Unapplied = inline_serializer("UnappliedFilter", {"name": serializers.CharField(), "reason": serializers.CharField()},
                              many=True)
SEARCH_FILTERS = [
    *(OpenApiParameter(name, str, description=f"case-insensitive exact {name}")
      for name in ("region", "country", "city", "operator")),
    OpenApiParameter("type", str, description="a facility type code (GET /api/facility-types)"),
    # a value that is not a number is not an error: it is named in `unapplied_filters` (contract.md)
    OpenApiParameter("min_area", str, description="minimum floor area in m² (a non-negative number)"),
    OpenApiParameter("max_area", str, description="maximum floor area in m² (a non-negative number)"),
    OpenApiParameter("q", str, description="text in the name, city, operator or slug"),
]


def _json(data) -> bytes:
    """As DRF's JSONRenderer writes it (compact, UTF-8, no NaN)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _facility_page(page, extra) -> HttpResponse:
    """Like `page_response`, with the count's nature: `{"results", "count", "count_is_estimate", "page",
    "page_size", ...extra}`. A page of results is the same for everyone until the directory changes and is kept
    (`directory.search_results`): its rows are written as JSON once, with it, and each answer around them."""
    rows = getattr(page, "rows_json", None)
    if rows is None:
        rows = page.rows_json = _json([facility_item(row) for row in page.rows])
    rest = _json({"count": page.count, "count_is_estimate": page.count_is_estimate, "page": page.number,
                  "page_size": page.size, **extra})
    return HttpResponse(b'{"results":' + rows + b"," + rest[1:], content_type="application/json")


class FacilityListView(WarehouseView):
    @paged(FacilitySerializer, extra={"attribution": Attribution, "count_is_estimate": CountIsEstimate},
           summary="Paged list of facilities")
    def get(self, request):
        page_number, page_size = bounded_page(request)
        page = directory.facilities_page(queryset=directory.active().defer("outline", "tags").order_by("slug"),
                                         page=page_number, page_size=page_size)
        return _facility_page(page, {"attribution": ATTRIBUTION})


class FacilitySearchView(WarehouseView):
    @paged(FacilitySerializer, name="FacilitySearchResults", responses=errors(429),
           extra={"attribution": Attribution, "unapplied_filters": Unapplied, "count_is_estimate": CountIsEstimate},
           summary="Search facilities",
           description="Filters: region, country, city, type, operator, min_area, max_area (m²), q. Every "
                       "parameter that could not be applied is named in `unapplied_filters` with a reason. Signed in, "
                       "a search counts against the monthly allowance (429 when spent).",
           parameters=SEARCH_FILTERS)
    def get(self, request):
        page_number, page_size = bounded_page(request)
        if request.user.is_authenticated:
            from warehouse_app.services.allowances import allowance_consume

            allowance_consume(user=request.user, kind="search")
        page, unapplied = directory.facilities_search_page(params=request.query_params, page=page_number,
                                                           page_size=page_size)
        asked_before = getattr(page, "rows_json", None) is not None  # the kept page was answered already
        response = _facility_page(page, {"unapplied_filters": unapplied, "attribution": ATTRIBUTION})
        # The same for everyone not signed in until the directory changes: kept whole (config/kept_answers.py)
        # once asked twice, so that searches asked once, most of them, do not crowd out the popular ones.
        if asked_before and not request.user.is_authenticated:
            keep(response, directory.search_results)
        return response


class FacilityDetailView(WarehouseView):
    @extend_schema(responses={200: FacilityDetailSerializer}, summary="One facility with its OSM way id")
    def get(self, request, slug):
        facility = facility_by_slug(slug=slug)
        return Response({**FacilityDetailSerializer(facility).data, "attribution": ATTRIBUTION})


def _listing(kind: str, rows, **extra) -> HttpResponse:
    """`{"results", "attribution", ...extra}` from the facets, written once per directory version and kept with
    them (`directory.facet_lists`): these lists change only when the facets are refreshed. The same for everyone,
    so the whole answer is kept too (config/kept_answers.py)."""
    body = directory.facet_lists.get_or_compute(
        ("answer", kind), lambda: _json({"results": list(rows()), "attribution": ATTRIBUTION, **extra}))
    return keep(HttpResponse(body, content_type="application/json"), directory.facet_lists)


class RegionListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Regions with facility count and combined floor area")
    def get(self, request):
        return _listing("regions", lambda: ({**r, "floor_area_m2": round(r["floor_area_m2"] or 0, 1)}
                                            for r in directory.regions()))


class FacilityTypeListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Facility type codes used by the filters")
    def get(self, request):
        return _listing("types", lambda: ({"code": r["type_code"], "facility_count": r["facility_count"]}
                                          for r in directory.facility_types()))


class CityListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Cities (facilities without a mapped city are left out)")
    def get(self, request):
        return _listing("cities", directory.cities)


class OperatorListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Operator names recorded on facilities")
    def get(self, request):
        return _listing("operators", directory.operators,
                        disclaimer="Operator names come from map data or from operator accounts; being listed "
                                   "implies no commercial relationship with this service.")


class HealthView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Liveness, dataset size, build stamp, attribution")
    def get(self, request):
        last = last_import()
        totals = directory.dataset_totals()  # from the facets: no scan of the facility table
        return Response({
            "status": "ok", "build": settings.WAREHOUSE_BUILD_STAMP,
            "dataset": {"facilities": totals["facilities"], "withdrawn": withdrawn_count(), "floor_area_m2": round(totals["floor_area_m2"], 1),
                "imported_at": last.finished_at if last else None, "source_file": last.source_file if last else None},
            "attribution": ATTRIBUTION,
        })
