"""Public directory routes."""
from django.conf import settings
from django.db.models import Max, Sum
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from config.errors import NotFound
from warehouse_app.api.base import ERRORS, WarehouseView, page_response
from warehouse_app.api.serializers import FacilityDetailSerializer, FacilitySerializer
from warehouse_app.models import Facility, ImportRun
from warehouse_app.services import directory

ATTRIBUTION = {"text": settings.WAREHOUSE_ATTRIBUTION, "url": settings.WAREHOUSE_ATTRIBUTION_URL,
               "license": settings.WAREHOUSE_DATA_LICENSE}
OK = OpenApiResponse(description="OK")
PAGING = [OpenApiParameter("page", int, description="1-based; a page past the end is 404"),
          OpenApiParameter("page_size", int, description="default 20, at most 100 (larger values are clamped)")]
SEARCH_FILTERS = [
    *(OpenApiParameter(name, str, description=f"case-insensitive exact {name}")
      for name in ("region", "country", "city", "operator")),
    OpenApiParameter("type", str, description="a facility type code (GET /api/facility-types)"),
    OpenApiParameter("min_area", float, description="minimum floor area in m²"),
    OpenApiParameter("max_area", float, description="maximum floor area in m²"),
    OpenApiParameter("q", str, description="text in the name, city, operator or slug"),
]


class FacilityListView(WarehouseView):
    @extend_schema(responses={200: FacilitySerializer(many=True), **ERRORS}, summary="Paged list of facilities",
                   parameters=PAGING)
    def get(self, request):
        return page_response(request, directory.active().defer("outline", "tags").order_by("slug"), FacilitySerializer,
                             extra={"attribution": ATTRIBUTION})


class FacilitySearchView(WarehouseView):
    @extend_schema(responses={200: FacilitySerializer(many=True), **ERRORS}, summary="Search facilities",
                   description="Filters: region, country, city, type, operator, min_area, max_area (m²), q. Every "
                               "parameter that could not be applied is named in `unapplied_filters` with a reason.",
                   parameters=[*SEARCH_FILTERS, *PAGING])
    def get(self, request):
        qs, unapplied = directory.facilities_search(request.query_params)
        if request.user.is_authenticated:
            from warehouse_app.services.allowances import allowance_consume

            allowance_consume(user=request.user, kind="search")
        return page_response(request, qs, FacilitySerializer,
                             extra={"unapplied_filters": unapplied, "attribution": ATTRIBUTION})


class FacilityDetailView(WarehouseView):
    @extend_schema(responses={200: FacilityDetailSerializer, **ERRORS}, summary="One facility with its OSM way id")
    def get(self, request, slug):
        facility = Facility.objects.filter(slug=slug).first()
        if facility is None:
            raise NotFound("No such facility.")
        return Response({**FacilityDetailSerializer(facility).data, "attribution": ATTRIBUTION})


def _listing(rows):
    return Response({"results": list(rows), "attribution": ATTRIBUTION})


class RegionListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Regions with facility count and combined floor area")
    def get(self, request):
        return _listing({**r, "floor_area_m2": round(r["floor_area_m2"] or 0, 1)} for r in directory.regions())


class FacilityTypeListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Facility type codes used by the filters")
    def get(self, request):
        return _listing({"code": r["type_code"], "facility_count": r["facility_count"]}
                        for r in directory.facility_types())


class CityListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Cities (facilities without a mapped city are left out)")
    def get(self, request):
        return _listing(directory.cities())


class OperatorListView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Operator names recorded on facilities")
    def get(self, request):
        return Response({"results": list(directory.operators()), "attribution": ATTRIBUTION,
                         "disclaimer": "Operator names come from map data or from operator accounts; being listed "
                                       "implies no commercial relationship with this service."})


class HealthView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Liveness, dataset size, build stamp, attribution")
    def get(self, request):
        last = ImportRun.objects.filter(finished_at__isnull=False).first()
        totals = directory.active().aggregate(area=Sum("floor_area_m2"), updated=Max("imported_at"))
        return Response({
            "status": "ok", "build": settings.WAREHOUSE_BUILD_STAMP,
            "dataset": {"facilities": directory.active().count(), "withdrawn": Facility.objects.filter(
                status=Facility.Status.WITHDRAWN).count(), "floor_area_m2": round(totals["area"] or 0, 1),
                "imported_at": last.finished_at if last else None, "source_file": last.source_file if last else None},
            "attribution": ATTRIBUTION,
        })
