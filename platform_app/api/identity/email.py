"""Email verification: ask for a link, verify with its token (docs/auth.md)."""
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, endpoint
from platform_app.api.identity.serializers import UserSerializer
from platform_app.services.identity import email_verification as services


class EmailVerifyInput(InputSerializer):
    token = serializers.CharField(max_length=500, help_text="The `token` of the emailed link "
                                                            "(`.../verify-email/?token=...`).")


class EmailVerificationView(PlatformView):
    @endpoint(scope=None, status=202, request=None, errors=(409, 429), summary="Email a new verification link",
              description="To the signed-in account's address. 409 `email_already_verified` when it is verified; "
                          "at most `EMAIL_VERIFICATION_SENDS_PER_HOUR` (5) links an hour (429).",
              response=inline_serializer("EmailVerificationSent", {"email": serializers.EmailField(),
                                                                    "sent": serializers.BooleanField()}))
    def post(self, request):
        services.email_verification_send(user=request.user)
        return Response({"email": request.user.email, "sent": True}, status=202)


class EmailVerifyView(PlatformView):
    @endpoint(public=True, request=EmailVerifyInput, summary="Verify an email address with the token of its link",
              description="No sign-in needed: the token names the account. 400 `invalid_verification_link` (also "
                          "when the account's address changed since) or `verification_link_expired`.",
              response=inline_serializer("EmailVerified", {"user": UserSerializer()}))
    def post(self, request):
        user = services.email_verify(token=validated(EmailVerifyInput, request)["token"])
        return Response({"user": UserSerializer(user).data})
