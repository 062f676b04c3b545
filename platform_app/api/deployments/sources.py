"""`POST P/sources`: a folder sent to be built (the command-line client's `svc deploy`), a tar.gz body read as a
stream with a bound (services/deployments/uploads.py)."""
from drf_spectacular.types import OpenApiTypes
from rest_framework.response import Response

from config.errors import ValidationFailed
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint
from platform_app.models import SourceUpload
from platform_app.services.deployments import uploads


class SourceUploadSerializer(ModelSerializer):
    class Meta:
        model = SourceUpload
        fields = ("id", "sha256", "size", "files", "created_at")


class SourceUploadView(PlatformView):
    # a tar.gz; any Content-Type is read as bytes (the client sends application/gzip)
    @endpoint(scope="deploy", status=201, request={"application/octet-stream": OpenApiTypes.BINARY}, errors=(413,),
              response=SourceUploadSerializer,
              summary="Upload a folder to build (a tar.gz; the same content twice is kept once)")
    def post(self, request, org_id, project_id):
        project = self.project(project_id)
        length = request.META.get("CONTENT_LENGTH") or ""
        if not length.isdigit():
            raise ValidationFailed("Send the archive with a Content-Length.", code="length_required")
        upload = uploads.source_upload_create(project=project, stream=request._request, length=int(length),
                                              actor=request.user)
        return Response(SourceUploadSerializer(upload).data, status=201)
