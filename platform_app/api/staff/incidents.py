"""Incidents on the status page, written by staff (`/v1/admin/incidents`)."""
from django.conf import settings
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from platform_app.api.base import endpoint
from platform_app.api.staff.base import StaffView
from platform_app.api.staff.status import COMPONENT, IMPACT, INCIDENT_STATUS, IncidentSerializer
from platform_app.services.staff import incidents as services


class IncidentInput(InputSerializer):
    title = serializers.CharField(max_length=200)
    impact = IMPACT(max_length=16)
    status = INCIDENT_STATUS(max_length=16, default="investigating")
    message = serializers.CharField(max_length=5000, help_text="the first update")
    components = serializers.ListField(child=COMPONENT(max_length=32), default=list,
                                       max_length=len(settings.STATUS_COMPONENTS))


class IncidentUpdateInput(InputSerializer):
    status = INCIDENT_STATUS(max_length=16)
    message = serializers.CharField(max_length=5000)


def _fresh(incident_id: str):
    return IncidentSerializer(services.incident_with_updates(incident_id=incident_id)).data


class IncidentListView(StaffView):
    @endpoint(scope="admin", status=201, request=IncidentInput, response=IncidentSerializer,
              summary="Open an incident (staff), with its first update")
    def post(self, request):
        v = validated(IncidentInput, request)
        incident = services.incident_create(title=v["title"], impact=v["impact"], status=v["status"],
                                            message=v["message"], components=v["components"], actor=request.user)
        return Response(_fresh(incident.pk), status=201)


class IncidentUpdateView(StaffView):
    @endpoint(scope="admin", status=201, request=IncidentUpdateInput, response=IncidentSerializer,
              summary="Add an update to an incident (staff); `resolved` resolves it",
              description="Answers the incident with all its updates.")
    def post(self, request, id):
        services.incident_get(incident_id=id)  # 404 before the body is looked at
        v = validated(IncidentUpdateInput, request)
        services.incident_update_add(incident_id=id, status=v["status"], message=v["message"], actor=request.user)
        return Response(_fresh(id), status=201)
