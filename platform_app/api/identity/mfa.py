"""TOTP factors: list, enrol, confirm, delete."""
from drf_spectacular.utils import inline_serializer
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint
from platform_app.services.identity import mfa
from platform_app.services.identity.selectors import totp_factors_of


class FactorSerializer(ModelSerializer):
    id = serializers.SerializerMethodField()
    type = serializers.SerializerMethodField()

    class Meta:
        model = TOTPDevice
        fields = ("id", "type", "name", "confirmed", "created_at")

    def get_id(self, obj) -> str:
        return mfa.factor_id(obj)

    def get_type(self, obj) -> str:
        return "totp"


class EnrolInput(InputSerializer):
    name = serializers.CharField(max_length=64, required=False, default="Authenticator")


class ConfirmInput(InputSerializer):
    factor_id = serializers.CharField(max_length=40, required=False)
    code = serializers.RegexField(r"^\d{6}$", error_messages={"invalid": "Must be 6 digits."})


class FactorListView(PlatformView):
    @endpoint(scope="read", response=FactorSerializer(many=True), summary="List MFA factors")
    def get(self, request):
        rows = totp_factors_of(user=request.user)
        return Response({"items": FactorSerializer(rows, many=True).data, "next_cursor": None})


class TotpEnrolView(PlatformView):
    @endpoint(scope="admin", status=201, request=EnrolInput, summary="Start TOTP enrolment",
              response=inline_serializer("TotpEnrolment", {
                  "factor": FactorSerializer(), "secret": serializers.CharField(),
                  "otpauth_uri": serializers.CharField(), "qr_code": serializers.CharField()}))
    def post(self, request):
        data = validated(EnrolInput, request)
        result = mfa.totp_enrol_start(user=request.user, name=data["name"])
        return Response({"factor": FactorSerializer(result["device"]).data, "secret": result["secret"],
                         "otpauth_uri": result["otpauth_uri"], "qr_code": result["qr_code"]}, status=201)


class TotpConfirmView(PlatformView):
    @endpoint(scope="admin", status=201, request=ConfirmInput, response=FactorSerializer, errors=(404, 429),
              summary="Confirm TOTP enrolment with a current code")
    def post(self, request):
        data = validated(ConfirmInput, request)
        device = mfa.totp_enrol_confirm(user=request.user, factor_id=data.get("factor_id"),
                                        code=data["code"], ip=self.ip)
        return Response(FactorSerializer(device).data, status=201)


class FactorDeleteView(PlatformView):
    @endpoint(scope="admin", response=inline_serializer("Deleted", {"deleted": serializers.BooleanField()}),
              summary="Remove an MFA factor")
    def delete(self, request, factor_id):
        mfa.factor_delete(user=request.user, factor_id=factor_id)
        return Response({"deleted": True})
