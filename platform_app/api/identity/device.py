"""Device authorization (RFC 8628) for the command-line client: `/v1/auth/device/code` and `/v1/auth/device/token`
speak OAuth's own snake_case fields and errors, like `/v1/mcp/token`. The user approves on the page `/device`."""
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers
from drf_spectacular.utils import inline_serializer
from rest_framework.parsers import FormParser, JSONParser

from platform_app.api.base import PlatformView, endpoint
from platform_app.api.mcp.mcp import NOT_A_BODY, OAUTH_ERROR, _oauth_answer, _oauth_body
from platform_app.services.identity import device
from platform_app.services.mcp.oauth import OAuthError

FORM = {"application/x-www-form-urlencoded": OpenApiTypes.OBJECT, "application/json": OpenApiTypes.OBJECT}


class DeviceCodeView(PlatformView):
    authentication_classes = []
    parser_classes = [FormParser, JSONParser]

    @endpoint(public=True, status=200, also={400: OAUTH_ERROR}, request=FORM,
              summary="Ask for a device code and a user code (RFC 8628 §3.1): `client_id`, optional `scope`",
              response=inline_serializer("DeviceCodes", {
                  "device_code": serializers.CharField(), "user_code": serializers.CharField(),
                  "verification_uri": serializers.CharField(), "verification_uri_complete": serializers.CharField(),
                  "expires_in": serializers.IntegerField(), "interval": serializers.IntegerField()}))
    def post(self, request):
        data = _oauth_body(request)
        if data is None:
            return _oauth_answer({"error": "invalid_request", "error_description": NOT_A_BODY}, 400)
        try:
            body = device.device_authorization_start(client_id=data.get("client_id", ""), scope=data.get("scope"),
                                                     site_url=settings.SITE_URL.rstrip("/"))
        except OAuthError as exc:
            return _oauth_answer(exc.body(), exc.status)
        return _oauth_answer(body, 200)


class DeviceTokenView(PlatformView):
    authentication_classes = []
    parser_classes = [FormParser, JSONParser]

    @endpoint(public=True, status=200, also={400: OAUTH_ERROR}, request=FORM,
              summary="Poll for the token (RFC 8628 §3.4): `grant_type`, `device_code`, `client_id`",
              response=inline_serializer("DeviceToken", {
                  "access_token": serializers.CharField(), "token_type": serializers.CharField(),
                  "scope": serializers.CharField(), "token_id": serializers.CharField(),
                  "expires_in": serializers.IntegerField()}))
    def post(self, request):
        data = _oauth_body(request)
        if data is None:
            return _oauth_answer({"error": "invalid_request", "error_description": NOT_A_BODY}, 400)
        try:
            body = device.device_token_poll(grant_type=data.get("grant_type", ""),
                                            device_code=data.get("device_code", ""),
                                            client_id=data.get("client_id", ""), ip=self.ip)
        except OAuthError as exc:
            return _oauth_answer(exc.body(), exc.status)
        return _oauth_answer(body, 200)
