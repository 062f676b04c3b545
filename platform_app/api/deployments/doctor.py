"""Git webhooks and the build doctor."""
import json

from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from config.errors import NotFound
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint
from platform_app.models import DoctorReport
from platform_app.services.deployments import deployments as deployment_services
from platform_app.services.deployments import doctor
from platform_app.services.providers import webhooks


class RawBodyParser(BaseParser):
    """The signature covers the exact bytes: nothing parses the body before it is checked."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return stream.read() if stream is not None else b""


class GitAWebhookView(PlatformView):
    parser_classes = [RawBodyParser]

    @endpoint(public=True, request=None, summary="Code-host webhook (push, ping, installation)",
              response=inline_serializer("WebhookResult", {"ok": serializers.BooleanField()}),
              parameters=[OpenApiParameter("x-hub-signature-256", str, OpenApiParameter.HEADER),
                          OpenApiParameter("x-git-event", str, OpenApiParameter.HEADER)],
              description="The signature (HMAC-SHA256 of the raw body) is checked first: 401 and nothing deployed when "
                          "it is wrong. A delivery id seen before is acknowledged and not deployed twice.")
    def post(self, request):
        body = request._request.body
        event = request.headers.get("x-git-event") or request.headers.get("x-github-event") or ""
        delivery = request.headers.get("x-git-delivery") or request.headers.get("x-github-delivery") or ""
        result = webhooks.webhook_receive(event=event, delivery_id=delivery, body=body,
                                          signature=request.headers.get("x-hub-signature-256", ""),
                                          payload_loader=lambda: json.loads(body or b"{}"))
        return Response(result)


FindingSerializer = inline_serializer("DoctorFinding", {
    "rule": serializers.CharField(), "title": serializers.CharField(), "evidence": serializers.ListField(),
    "fix": serializers.CharField()})


class DoctorReportSerializer(ModelSerializer):
    deployment_id = serializers.CharField()

    class Meta:
        model = DoctorReport
        fields = ("id", "deployment_id", "findings", "created_at", "pull_request_url")


class DiagnosesView(PlatformView):
    @endpoint(scope="read", summary="What the doctor finds in this deployment's log, computed now",
              response=type(FindingSerializer)(many=True))
    def get(self, request, org_id, deployment_id):
        deployment = deployment_services.deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        return Response({"items": [f.__dict__ for f in doctor.diagnose(deployment)], "next_cursor": None})


class DoctorView(PlatformView):
    @endpoint(scope="read", response=DoctorReportSerializer, summary="The latest doctor report of a deployment")
    def get(self, request, org_id, deployment_id):
        deployment = deployment_services.deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        report = deployment.doctor_reports.first()
        if report is None:
            raise NotFound("No doctor report yet; POST to create one.")
        return Response(DoctorReportSerializer(report).data)

    @endpoint(scope="deploy", status=201, request=None, response=DoctorReportSerializer,
              summary="Run the doctor on a failed deployment")
    def post(self, request, org_id, deployment_id):
        deployment = deployment_services.deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        return Response(DoctorReportSerializer(doctor.doctor_report_create(deployment=deployment)).data, status=201)


class DoctorPullRequestView(PlatformView):
    @endpoint(scope="deploy", status=201, request=None, response=DoctorReportSerializer, errors=(501, 502),
              summary="Open a pull request with the fix through the Git provider")
    def post(self, request, org_id, report_id):
        report = doctor.doctor_report_pr(workspace=self.workspace, report_id=report_id)
        return Response(DoctorReportSerializer(report).data, status=201)
