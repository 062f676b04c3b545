"""A build job's routes, for the builder running it: authenticated by the job's token (`Authorization: Bearer
bld_...`), answered while the build runs (services/deployments/build_jobs.py)."""
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import Unauthenticated, ValidationFailed
from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, endpoint
from platform_app.nodes.builder import BuildFailed
from platform_app.services.deployments import build_jobs
from platform_app.services.deployments.deployment_log import LINE_CHARS


class LogLineInput(InputSerializer):
    stream = serializers.ChoiceField(choices=["build", "system"], default="build")
    # a builder cuts lines at LINE_BYTES and says by how much (` …[cut: N bytes]`)
    text = serializers.CharField(max_length=LINE_CHARS, allow_blank=True, trim_whitespace=False)


class LogsInput(InputSerializer):
    lines = serializers.ListField(child=LogLineInput(), max_length=1000, default=list)


class FinishInput(InputSerializer):
    status = serializers.ChoiceField(choices=["ready", "error", "canceled"])
    message = serializers.CharField(max_length=2000, allow_blank=True, default="", trim_whitespace=False)
    sandbox = serializers.DictField(required=False, default=dict)


def _job(request, deployment_id):
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        raise Unauthenticated("Send the job token as `Authorization: Bearer bld_...`.")
    return build_jobs.build_job_authenticate(deployment_id=deployment_id, token=header[7:])


class BuildView(PlatformView):
    authentication_classes = []


class BuildSourceView(BuildView):
    @endpoint(public=True, errors=(401, 409), summary="The build's source archive",
              response=OpenApiResponse(description="application/gzip"))
    def get(self, request, deployment_id):
        stream = build_jobs.build_job_source(job=_job(request, deployment_id))
        return FileResponse(stream, content_type="application/gzip")


class BuildLogsView(BuildView):
    @endpoint(public=True, request=LogsInput, errors=(401,), summary="Append build output; renews the build's lease",
              response=inline_serializer("BuildLogsAnswer", {"canceled": serializers.BooleanField()}))
    def post(self, request, deployment_id):
        job = _job(request, deployment_id)
        data = validated(LogsInput, request)
        stop = build_jobs.build_job_log(job=job, lines=[(line["stream"], line["text"]) for line in data["lines"]])
        return Response({"canceled": stop})


class BuildArtifactView(BuildView):
    @endpoint(public=True, request={"application/octet-stream": OpenApiTypes.BINARY}, status=201,
              errors=(401, 409, 413), summary="Upload the build's output (a tar.gz, checked and unpacked here)",
              response=OpenApiResponse(description="Stored"))
    def put(self, request, deployment_id):
        job = _job(request, deployment_id)
        length = request.META.get("CONTENT_LENGTH") or ""
        if not length.isdigit():
            raise ValidationFailed("Send the archive with a Content-Length.", code="length_required")
        try:
            build_jobs.build_job_artifact(job=job, stream=request._request, length=int(length))
        except BuildFailed as exc:
            raise ValidationFailed(str(exc), code="output_refused")
        return Response(status=201)


class BuildFinishView(BuildView):
    @endpoint(public=True, request=FinishInput, errors=(401,), summary="The builder's outcome",
              response=inline_serializer("BuildFinished", {"status": serializers.CharField()}))
    def post(self, request, deployment_id):
        job = _job(request, deployment_id)
        data = validated(FinishInput, request)
        return Response({"status": build_jobs.build_job_finish(job=job, **data)})
