"""Liveness and the identity provider's public keys."""
from django.db import connection
from django.http import JsonResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from platform_app.api.base import PlatformView, endpoint
from platform_app.services.keys import jwks


class HealthView(PlatformView):
    @endpoint(public=True, summary="Liveness", response=inline_serializer("Health", {
        "status": serializers.CharField(), "database": serializers.CharField(), "version": serializers.CharField()}))
    def get(self, request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return Response({"status": "ok", "database": connection.vendor, "version": "0.1.0"})


@extend_schema(exclude=True)
def jwks_view(request):
    resp = JsonResponse(jwks())
    resp["Cache-Control"] = "public, max-age=300"
    return resp
