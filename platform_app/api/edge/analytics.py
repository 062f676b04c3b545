"""Web analytics: the public tracker script and beacon, and the project's reports (P = /v1/orgs/{orgId}/projects/{projectId})."""
from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, query_int
from platform_app.api.base import PlatformView, endpoint
from platform_app.edge import site_for  # the edge's cached host lookup: a beacon's origin costs no query
from platform_app.services.edge import analytics

DAYS = OpenApiParameter("days", {"type": "integer", "minimum": 1},
                        description="the last N UTC days, today included: 1-90, default 30 (larger values are "
                                    "clamped to ANALYTICS_MAX_DAYS)")
CORS_HEADERS = {"Access-Control-Allow-Methods": "POST, OPTIONS", "Access-Control-Allow-Headers": "Content-Type",
                "Access-Control-Max-Age": "86400"}


def _days(request) -> int:
    return query_int(request, "days", default=30, maximum=settings.ANALYTICS_MAX_DAYS)


class AnalyticsScriptView(PlatformView):
    authentication_classes = []

    @endpoint(public=True, summary="The tracker script (JavaScript)",
              response=OpenApiResponse(description="application/javascript: sends page views and Web Vitals "
                                                   "with navigator.sendBeacon; no cookies; honours Do Not Track and "
                                                   "Global Privacy Control"))
    def get(self, request, project_id):
        response = HttpResponse(analytics.script_source(), content_type="application/javascript; charset=utf-8")
        response["Cache-Control"] = "public, max-age=3600"
        response["Cross-Origin-Resource-Policy"] = "cross-origin"
        return response


class BeaconInput(InputSerializer):
    """The beacon's published shape; the body is checked by analytics.beacon_parse (it arrives as text/plain)."""

    type = serializers.ChoiceField(choices=["pageview", "vital"])
    path = serializers.CharField(max_length=512)
    referrer = serializers.CharField(max_length=2048, required=False)
    name = serializers.ChoiceField(choices=list(analytics.VITALS), required=False)
    value = serializers.FloatField(required=False)


class AnalyticsBeaconView(PlatformView):
    """Public and cookie-free: no authentication runs, so a signed-in visitor's session cookie changes nothing."""

    authentication_classes = []

    def _cors(self, response, project_id: str):
        origin = self.request.headers.get("Origin")
        response["Vary"] = "Origin"
        if origin and analytics.beacon_origin_allowed(project_id=project_id, origin=origin, site_of=site_for):
            response["Access-Control-Allow-Origin"] = origin
            for key, value in CORS_HEADERS.items():
                response[key] = value
        return response

    @endpoint(public=True, status=204, errors=(429,), summary="Record a page view or a Web Vital",
              request=BeaconInput,
              response=OpenApiResponse(description="Accepted, or ignored (unknown project, analytics off, "
                                                   "foreign origin, bot)"),
              description="Body as JSON text (sendBeacon sends text/plain). At most ANALYTICS_BEACON_MAX_BYTES "
                          "(2 KiB); malformed or larger is 400 and nothing is stored. CORS only for the project's "
                          "own addresses; ANALYTICS_BEACONS_PER_MINUTE per address.")
    def post(self, request, project_id):
        analytics.analytics_beacon(project_id=project_id, raw=request.body, origin=request.headers.get("Origin"),
                                   ip=self.ip, user_agent=request.headers.get("User-Agent", ""), site_of=site_for)
        return self._cors(Response(status=204), project_id)

    def options(self, request, *args, **kwargs):
        """CORS preflight: the project's own origins only."""
        return self._cors(Response(status=204), kwargs.get("project_id", ""))

    options.public = True

    def handle_exception(self, exc):
        return self._cors(super().handle_exception(exc), self.kwargs.get("project_id", ""))


class AnalyticsOverviewView(PlatformView):
    @endpoint(scope="read", parameters=[DAYS], summary="Visitors, page views, bounce rate, top referrers",
              response=inline_serializer("AnalyticsOverview", {
                  "days": serializers.IntegerField(), "visitors": serializers.IntegerField(),
                  "page_views": serializers.IntegerField(), "bounce_rate": serializers.FloatField(),
                  "top_referrers": inline_serializer("AnalyticsReferrer", {
                      "referrer": serializers.CharField(), "visitors": serializers.IntegerField()}, many=True)}),
              description="A visitor is counted once per UTC day (a daily-rotating salted hash). bounceRate is "
                          "the share of visitors with one page view (0 to 1).")
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        return Response(analytics.analytics_overview(project=project, days=_days(request)))


class TopPathSerializer(serializers.Serializer):
    path = serializers.CharField()
    page_views = serializers.IntegerField()
    visitors = serializers.IntegerField()


class AnalyticsTopPathsView(PlatformView):
    @endpoint(scope="read", response=TopPathSerializer(many=True), summary="Most viewed paths",
              parameters=[DAYS, OpenApiParameter("limit", {"type": "integer", "minimum": 1},
                                                 description="1-100, default 20 (larger values are clamped)")])
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        days = _days(request)
        limit = query_int(request, "limit", default=20, maximum=100)
        items = analytics.analytics_top_paths(project=project, days=days, limit=limit)
        return Response({"items": items, "next_cursor": None})


METRIC = inline_serializer("AnalyticsVital", {"p75": serializers.FloatField(allow_null=True),
                                              "samples": serializers.IntegerField()})


class AnalyticsVitalsView(PlatformView):
    @endpoint(scope="read", summary="Web Vitals: the 75th percentile per metric",
              parameters=[DAYS, OpenApiParameter("path", str, description="only this path")],
              response=inline_serializer("AnalyticsVitals", {
                  "days": serializers.IntegerField(), "path": serializers.CharField(allow_null=True),
                  "metrics": inline_serializer("AnalyticsVitalMetrics", {name: METRIC for name in analytics.VITALS})}),
              description="LCP, INP, TTFB and FCP in milliseconds, CLS unitless; p75 by nearest rank, null "
                          "without samples.")
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        path = request.query_params.get("path") or None
        return Response(analytics.analytics_vitals(project=project, days=_days(request), path=path))
