"""The payments provider's webhook: `POST /v1/webhooks/payments` (public; the signature is the credential)."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from platform_app.api.base import PlatformView, endpoint
from platform_app.api.deployments.doctor import RawBodyParser
from platform_app.services.billing.webhooks import payments_webhook_receive


class PaymentsWebhookView(PlatformView):
    parser_classes = [RawBodyParser]

    @endpoint(public=True, request=None, summary="Payments provider webhook (invoices, subscriptions)",
              response=inline_serializer("PaymentsWebhookResult", {
                  "received": serializers.BooleanField(), "event": serializers.CharField(),
                  "type": serializers.CharField(), "duplicate": serializers.BooleanField(required=False),
                  "result": serializers.CharField(required=False)}),
              parameters=[OpenApiParameter("payment-signature", str, OpenApiParameter.HEADER, required=True,
                                           description='t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">')],
              description="The signature (Stripe's scheme, PAYMENTS_WEBHOOK_SECRET, 300 s tolerance) is checked "
                          "first: 401 and nothing changed when it is missing, old or wrong. An event id seen before "
                          "is acknowledged (`duplicate`) and not applied twice.")
    def post(self, request):
        return Response(payments_webhook_receive(body=request._request.body,
                                                 signature=request.headers.get("payment-signature", "")))
