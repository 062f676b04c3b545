"""The OTP REST API under /api/v1/ (document 2, contract.md)."""
import uuid

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config.openapi import OtpErrorSerializer
from otp_app import messages
from otp_app.authentication import ApiKeyAuthentication, HasApiKey
from otp_app.channels.twilio_sms import twilio_signature
from otp_app.models import CHANNELS, SandboxMessage
from otp_app.services import records as record_services
from otp_app.services.balance import balance_report
from otp_app.services.errors import ApplicationError, SandboxOnly, ValidationFailed
from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from otp_app.services.console import sandbox_messages_of


def errors(*statuses) -> dict:
    """`responses` entries for the errors a view answers beyond those config.schema derives (401, 400...)."""
    return {status: OtpErrorSerializer for status in statuses}


# Serializers --------------------------------------------------------------------------

# What the services accept, published in the schema; the services keep their own error codes (contract.md).
@extend_schema_field({"type": "string", "maxLength": 254,
                      "pattern": r"^(\+[1-9][0-9]{6,14}|[^@\s]+@[^@\s]+\.[^@\s]+)$"})
class RecipientField(serializers.CharField):
    """E.164 (checked against the numbering plans with phonenumbers) or an email address."""


@extend_schema_field({"type": "string", "maxLength": messages.TAG_MAX,
                      "pattern": rf"^({'|'.join(messages.LOCALES)})([-_][A-Za-z0-9]{{1,8}})*$"})
class LocaleField(serializers.CharField):
    """A BCP 47 language tag of a language with messages, optionally with script, region... (`en-GB`)."""


@extend_schema_field({"type": "string", "nullable": True, "enum": [*CHANNELS, None]})
class ChannelField(serializers.CharField):
    """One of CHANNELS, or null (routing decides)."""


@extend_schema_field({"type": "string", "pattern": "^[0-9]{6}$"})
class CodeField(serializers.CharField):
    """The 6 digits that were sent."""


class SendInput(InputSerializer):
    recipient = RecipientField(max_length=254, help_text="E.164 number (+4915112345678), or an email for email")
    locale = LocaleField(max_length=messages.TAG_MAX, required=False, default="en",
                         help_text="BCP 47: en, de, fr-CA, pt-BR, ...")
    channel = ChannelField(max_length=16, required=False, allow_null=True, default=None,
                           help_text="whatsapp, sms, email or console; omitted: routing decides")


class VerifyInput(InputSerializer):
    id = serializers.CharField(max_length=40)
    code = CodeField(max_length=32)


class ResendInput(InputSerializer):
    id = serializers.CharField(max_length=40)
    channel = ChannelField(max_length=16, required=False, allow_null=True, default=None)


class RecordSerializer(serializers.Serializer):
    id = serializers.CharField()
    channel = serializers.CharField()
    status = serializers.CharField()
    recipient = serializers.CharField()
    locale = serializers.CharField()
    expires_at = serializers.DateTimeField()
    attempts_left = serializers.IntegerField()
    sends = serializers.IntegerField()
    mode = serializers.CharField()
    created_at = serializers.DateTimeField()
    verified_at = serializers.DateTimeField(allow_null=True)


# One bound instance writes every send's and resend's body: a serializer made per response (its fields deep-copied)
# costs four times its output, and to_representation keeps no state between calls.
_record_serializer = RecordSerializer()


def record_data(record) -> dict:
    return _record_serializer.to_representation(record)


class DeliverySerializer(serializers.Serializer):
    channel = serializers.CharField()
    status = serializers.CharField()
    at = serializers.DateTimeField(source="updated_at")
    error = serializers.CharField(allow_blank=True)
    send_number = serializers.IntegerField()


class RecordDetailSerializer(RecordSerializer):
    delivery = DeliverySerializer(source="deliveries.all", many=True)


class VerifyResultSerializer(serializers.Serializer):
    id = serializers.CharField()
    verified = serializers.BooleanField()
    status = serializers.CharField()
    attempts_left = serializers.IntegerField()


class SandboxMessageSerializer(ModelSerializer):
    otp_id = serializers.CharField(source="record_id")

    class Meta:
        model = SandboxMessage
        fields = ("otp_id", "channel", "recipient", "text", "code", "created_at")


# Views --------------------------------------------------------------------------------

class OtpView(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [HasApiKey]

    @property
    def key(self):
        return self.request.auth


def _idempotency_key(request):
    raw = request.headers.get("idempotency-key")
    if raw is None:
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise ValidationFailed("idempotency-key must be a UUID.", code="invalid_idempotency_key")


class SendView(OtpView):
    @extend_schema(request=SendInput, responses={201: RecordSerializer, 200: RecordSerializer, **errors(402, 403, 422, 429)},
                   parameters=[OpenApiParameter("idempotency-key", str, OpenApiParameter.HEADER,
                                                description="A UUID; a replay returns the first response (200).")],
                   summary="Send a code", description="201 with the new record; 200 when an idempotent replay.")
    def post(self, request):
        key = _idempotency_key(request)
        v = validated(SendInput, request)
        result = record_services.otp_send(api_key=self.key, recipient=v["recipient"], locale=v["locale"],
                                          channel=v["channel"], idempotency_key=key,
                                          fingerprint=record_services.request_fingerprint(request.data))
        return Response(record_data(result.record), status=201 if result.created else 200)


class VerifyView(OtpView):
    @extend_schema(request=VerifyInput, responses={200: VerifyResultSerializer, **errors(404)}, summary="Verify a code")
    def post(self, request):
        data = validated(VerifyInput, request)
        code = data["code"]
        if not (len(code) == 6 and code.isascii() and code.isdigit()):
            raise ValidationFailed("code must be the 6 digits that were sent.", code="invalid_code")
        record = record_services.otp_verify(api_key=self.key, record_id=data["id"], code=code)
        return Response({"id": record.pk, "verified": record.status == "verified", "status": record.status,
                         "attempts_left": record.attempts_left})


class ResendView(OtpView):
    @extend_schema(request=ResendInput, responses={200: RecordSerializer, **errors(402, 403, 404, 422, 429)},
                   summary="Resend a code",
                   description="A fresh code replaces the old one and attempts reset. The expiry stays 10 minutes "
                               "from the first send. Within the cooldown: 429 `resend_cooldown` with Retry-After.")
    def post(self, request):
        data = validated(ResendInput, request)
        record = record_services.otp_resend(api_key=self.key, record_id=data["id"],
                                            channel=data["channel"])
        return Response(record_data(record))


class StatusView(OtpView):
    @extend_schema(responses={200: RecordDetailSerializer}, summary="A code's delivery and verification state")
    def get(self, request, record_id):
        record = record_services.record_get(api_key=self.key, record_id=record_id)
        if record.status == "sent" and record.expires_at <= timezone.now():
            record.status = "expired"  # over TTL is expired even before the sweep persists it
        return Response(RecordDetailSerializer(record).data)


class BalanceView(OtpView):
    @extend_schema(summary="Balance and this month's consumption per channel", responses={
        200: inline_serializer("Balance", {"currency": serializers.CharField(), "balance": serializers.IntegerField(),
                                           "mode": serializers.CharField(), "consumption": serializers.DictField()})})
    def get(self, request):
        return Response(balance_report(api_key=self.key))


class SandboxMessagesView(OtpView):
    @extend_schema(summary="The sandbox outbox of a test key, newest first",
                   responses={200: inline_serializer("SandboxOutbox", {
                       "results": SandboxMessageSerializer(many=True)}), **errors(403)})
    def get(self, request):
        if self.key.mode != "test":
            raise SandboxOnly()
        rows = sandbox_messages_of(api_key=self.key)
        return Response({"results": SandboxMessageSerializer(rows, many=True).data})


class TwilioCallbackView(APIView):
    """Twilio status callbacks (form-encoded, X-Twilio-Signature)."""

    authentication_classes = []
    permission_classes = []
    parser_classes = [FormParser]

    @extend_schema(request=None, responses={204: None, 401: OtpErrorSerializer}, summary="Twilio status callback")
    def post(self, request):
        import hmac

        from otp_app.services.delivery import delivery_follow_up, delivery_status_update

        params = {k: request.data.get(k) for k in request.data}
        url = settings.OTP_PUBLIC_BASE_URL.rstrip("/") + request.path
        expected = twilio_signature(url, params, settings.TWILIO_AUTH_TOKEN or "")
        if not settings.TWILIO_AUTH_TOKEN or not hmac.compare_digest(expected, request.headers.get("X-Twilio-Signature", "")):
            raise ApplicationError("Bad signature.", code="invalid_signature", status=401)
        attempt = delivery_status_update(provider_message_id=params.get("MessageSid", ""),
                                         provider_status=params.get("MessageStatus", ""))
        delivery_follow_up(attempt=attempt)
        return Response(status=204)
