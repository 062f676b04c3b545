"""Cost (O = /v1/orgs/{orgId}): `GET O/cost/overview`, `O/cost/per-project`, `O/cost/recommendations` (scope
`read`; docs/billing.md). Money is in minor units of `currency`."""
import base64
import binascii

from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ValidationFailed
from config.inputs import query_int
from platform_app.api.base import PAGE_PARAMETERS, PlatformView, endpoint, field_with_schema
from platform_app.services.billing import meters
from platform_app.services.billing.recommendations import recommendations_list
from platform_app.services.billing.selectors import cost_overview, cost_per_project

CATEGORIES = inline_serializer("CostByCategory", {c: serializers.IntegerField() for c in meters.CATEGORIES})
PERIOD = inline_serializer("BillingPeriod", {"start": serializers.DateTimeField(), "end": serializers.DateTimeField()})
PERIOD_PARAMETER = OpenApiParameter("period", str, enum=["current", "previous"],
                                    description="`current` (default): this calendar month (UTC); `previous`: last")

CostOverviewSerializer = inline_serializer("CostOverview", {
    "period": PERIOD, "currency": serializers.CharField(),
    "total": serializers.IntegerField(help_text="this period so far, minor units"),
    "by_category": CATEGORIES,
    "quantities": inline_serializer("CostQuantities", {c: serializers.FloatField() for c in meters.CATEGORIES},
                                    help_text="build minutes, requests, GB, instance hours, GB-months"),
    "forecast": serializers.IntegerField(help_text="to the end of the period"),
    "forecast_method": serializers.CharField(), "measured_until": serializers.DateTimeField(),
    "previous_period": PERIOD, "previous_total": serializers.IntegerField(), "previous_by_category": CATEGORIES,
})


class ProjectCostSerializer(serializers.Serializer):
    project_id = serializers.CharField()
    project_name = serializers.CharField()
    deleted = serializers.BooleanField(help_text="the project is gone; its usage still counts")
    total = serializers.IntegerField()
    by_category = CATEGORIES
    currency = serializers.CharField()


class RecommendationSerializer(serializers.Serializer):
    kind = field_with_schema({"type": "string", "enum": ["idle_component", "oversized_instance",
                                                         "unvisited_preview"]})()
    project_id = serializers.CharField()
    resource = serializers.CharField(help_text="the component or deployment id")
    message = serializers.CharField()
    saving_monthly = serializers.IntegerField(help_text="minor units a month, at today's prices")
    currency = serializers.CharField()


def _offset(request) -> int:
    cursor = request.query_params.get("cursor")
    if not cursor:
        return 0
    try:
        kind, value = base64.urlsafe_b64decode(cursor.encode()).decode().split(":", 1)
        if kind != "o" or not value.isdigit() or len(value) > 9:
            raise ValueError(cursor)
        return int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValidationFailed("`cursor` is not valid.", details={"cursor": ["Invalid cursor."]})


def list_page(request, items: list, serializer_class) -> Response:
    """`{"items", "nextCursor"}` over a computed list (limit 1-100, default 20)."""
    limit = query_int(request, "limit", default=20, maximum=100)
    start = _offset(request)
    page = items[start:start + limit]
    more = start + limit < len(items)
    next_cursor = base64.urlsafe_b64encode(f"o:{start + limit}".encode()).decode() if more else None
    return Response({"items": serializer_class(page, many=True).data, "next_cursor": next_cursor})


def _previous(request) -> bool:
    period = request.query_params.get("period", "current")
    if period not in ("current", "previous"):
        raise ValidationFailed("period must be current or previous.", details={"period": ["current or previous."]})
    return period == "previous"


class CostOverviewView(PlatformView):
    @endpoint(scope="read", response=CostOverviewSerializer, summary="This period's cost, forecast and the last's",
              description="By category (builds, requests, bandwidth, instances, storage) from the hourly usage "
                          "records priced with the price book. `forecast` is linear: the cost so far divided by "
                          "the share of the period measured (`measuredUntil`).")
    def get(self, request, org_id):
        return Response(cost_overview(workspace=self.workspace))


class CostPerProjectView(PlatformView):
    @endpoint(scope="read", response=ProjectCostSerializer(many=True), summary="A period's cost per project",
              parameters=[PERIOD_PARAMETER, *PAGE_PARAMETERS], description="Most expensive first.")
    def get(self, request, org_id):
        _, items = cost_per_project(workspace=self.workspace, previous=_previous(request))
        return list_page(request, items, ProjectCostSerializer)


class CostRecommendationsView(PlatformView):
    @endpoint(scope="read", response=RecommendationSerializer(many=True), parameters=PAGE_PARAMETERS,
              summary="Ways to spend less, from real usage, biggest saving first",
              description="Idle web components (no request to their project for BILLING_IDLE_DAYS), oversized "
                          "instances (memory peak well under the size), preview deployments never visited.")
    def get(self, request, org_id):
        items = [r.__dict__ for r in recommendations_list(workspace=self.workspace)]
        return list_page(request, items, RecommendationSerializer)
