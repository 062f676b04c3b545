"""The public status (`/v1/status/...`): components, SLOs and incidents; an SLO's hourly history."""
from django.conf import settings
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import query_int
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint, field_with_schema
from platform_app.models import Incident
from platform_app.services.staff import status as services

STATE = field_with_schema({"type": "string", "enum": [services.OPERATIONAL, services.DEGRADED, services.OUTAGE]})
IMPACT = field_with_schema({"type": "string", "enum": list(Incident.Impact.values)})
INCIDENT_STATUS = field_with_schema({"type": "string", "enum": list(Incident.Status.values)})
COMPONENT = field_with_schema({"type": "string", "enum": list(settings.STATUS_COMPONENTS)})
MAX_HOURS = 720


class IncidentUpdateSerializer(serializers.Serializer):
    status = INCIDENT_STATUS()
    message = serializers.CharField()
    at = serializers.DateTimeField(source="created_at")


class IncidentSerializer(ModelSerializer):
    impact = IMPACT()
    status = INCIDENT_STATUS()
    components = serializers.ListField(child=COMPONENT())
    updates = IncidentUpdateSerializer(many=True, read_only=True, help_text="oldest first")

    class Meta:
        model = Incident
        fields = ("id", "title", "impact", "status", "components", "started_at", "resolved_at", "updates")


class StatusComponentSerializer(serializers.Serializer):
    key = COMPONENT()
    name = serializers.CharField()
    status = STATE()


class SloSerializer(serializers.Serializer):
    key = serializers.CharField()
    description = serializers.CharField()
    objective = serializers.FloatField(help_text="% of probes that must be good")
    current = serializers.FloatField(allow_null=True, help_text="% of good probes this month so far; null without any")
    error_budget_remaining = serializers.FloatField(
        help_text="% of this month's error budget left (100: untouched; negative: overspent)")


class StatusSerializer(serializers.Serializer):
    status = STATE(help_text="the worst of the components")
    components = StatusComponentSerializer(many=True)
    slos = SloSerializer(many=True)
    incidents = IncidentSerializer(many=True, help_text="open ones and those resolved in the last 7 days")


class PointSerializer(serializers.Serializer):
    at = serializers.DateTimeField(help_text="the hour's start")
    availability = serializers.FloatField(allow_null=True, help_text="% of good probes; null without any")
    p95_ms = serializers.IntegerField(allow_null=True)


class HistorySerializer(serializers.Serializer):
    key = serializers.CharField()
    hours = serializers.IntegerField()
    points = PointSerializer(many=True, help_text="one per hour, oldest first, the current hour last")


class StatusPublicView(PlatformView):
    authentication_classes = []  # public: a stale credential sent along changes nothing

    @endpoint(public=True, response=StatusSerializer, summary="Platform status: components, SLOs, incidents")
    def get(self, request):
        return Response(StatusSerializer(services.status_public()).data)


class SloHistoryView(PlatformView):
    authentication_classes = []

    @endpoint(public=True, response=HistorySerializer, summary="An SLO's hourly availability and p95 latency",
              parameters=[OpenApiParameter("hours", {"type": "integer", "minimum": 1, "maximum": MAX_HOURS},
                                           description=f"1-{MAX_HOURS}, default 24")])
    def get(self, request, key):
        hours = query_int(request, "hours", default=24, maximum=MAX_HOURS, clamp=False)
        return Response(HistorySerializer(services.slo_history(key=key, hours=hours)).data)
