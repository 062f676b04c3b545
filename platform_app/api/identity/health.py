"""Liveness and the identity provider's public keys."""
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ServiceUnavailable
from platform_app.api.base import PlatformView, endpoint
from platform_app.services.health import database_check
from platform_app.services.identity.keys import jwks


class HealthView(PlatformView):
    authentication_classes = []  # a credential sent along must not reach the database before the check does

    @endpoint(public=True, summary="Liveness (503 when the database does not answer within a second)", errors=(503,),
              response=inline_serializer("Health", {"status": serializers.CharField(),
                                                    "database": serializers.CharField(),
                                                    "version": serializers.CharField()}))
    def get(self, request):
        if not database_check(timeout=settings.HEALTH_DATABASE_TIMEOUT_SECONDS):
            raise ServiceUnavailable("The database is not answering.", code="database_unavailable",
                                     details={"database": "unavailable"}, headers={"Retry-After": "5"})
        return Response({"status": "ok", "database": connection.vendor, "version": "0.1.0"})


@extend_schema(exclude=True)
def jwks_view(request):
    resp = JsonResponse(jwks())
    resp["Cache-Control"] = "public, max-age=300"
    return resp
