"""`Authorization: Bearer svc_live_...|svc_test_...` for the OTP API."""
from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission

from otp_app.models import ApiKey
from otp_app.services.errors import Unauthenticated
from otp_app.services.keys import otp_key_authenticate


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != b"bearer":
            return None
        if len(header) != 2:
            raise Unauthenticated("Malformed Authorization header; expected `Bearer <API key>`.")
        return AnonymousUser(), otp_key_authenticate(header[1].decode(errors="replace"))

    def authenticate_header(self, request):
        return 'Bearer realm="otp"'


class HasApiKey(BasePermission):
    def has_permission(self, request, view):
        if not isinstance(request.auth, ApiKey):
            raise Unauthenticated("Send your API key as `Authorization: Bearer svc_live_...` or `svc_test_...`.")
        return True


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "otp_app.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "`svc_live_...` or `svc_test_...` (sandbox)."}
