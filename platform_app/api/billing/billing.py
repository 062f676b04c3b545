"""Billing (O = /v1/orgs/{orgId}; scope `billing`, which owners, admins and billing members hold; docs/billing.md):
the summary, usage cap, payment methods (setup intent, default, delete), subscription, invoices, tax ids, address
and email. Routes that need the payments provider answer 409 `payments_not_configured` without PAYMENTS_API_KEY;
the summary, usage cap, invoices and tax ids held answer regardless."""
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import Invoice, TaxId
from platform_app.services.billing import billing as services
from platform_app.services.billing import caps
from platform_app.services.billing.tax_ids import TYPES

PERIOD = inline_serializer("BillingCurrentPeriod", {"start": serializers.DateTimeField(),
                                                     "end": serializers.DateTimeField()})
ADDRESS_FIELDS = {"line1": serializers.CharField(), "line2": serializers.CharField(allow_blank=True),
                  "city": serializers.CharField(allow_blank=True), "postal_code": serializers.CharField(allow_blank=True),
                  "state": serializers.CharField(allow_blank=True),
                  "country": serializers.CharField(help_text="ISO 3166-1 alpha-2")}
AddressSerializer = inline_serializer("BillingAddress", ADDRESS_FIELDS)

BillingSerializer = inline_serializer("Billing", {
    "plan": serializers.CharField(help_text="the workspace's plan (PLANS)"),
    "status": serializers.CharField(help_text="none, active, trialing, past_due, canceled... (the subscription's, "
                                              "or past_due once a failed invoice is unpaid past the grace period)"),
    "current_period": PERIOD,
    "spend_this_period": serializers.IntegerField(help_text="minor units, metered hours so far"),
    "usage_cap": serializers.IntegerField(allow_null=True), "usage_cap_reached": serializers.BooleanField(),
    "usage_cap_message": serializers.CharField(), "currency": serializers.CharField(),
    "email": serializers.CharField(allow_blank=True),
    "address": inline_serializer("BillingAddressOrNull", ADDRESS_FIELDS, allow_null=True),
    "default_payment_method_id": serializers.CharField(allow_null=True),
    "subscription": inline_serializer("BillingSubscription", {
        "id": serializers.CharField(), "plan": serializers.CharField(), "status": serializers.CharField(),
        "cancel_at_period_end": serializers.BooleanField(),
        "current_period_end": serializers.DateTimeField(allow_null=True)}, allow_null=True),
    "dunning": inline_serializer("BillingDunning", {
        "invoice_id": serializers.CharField(), "failed_at": serializers.DateTimeField(),
        "past_due_at": serializers.DateTimeField(), "past_due": serializers.BooleanField()}, allow_null=True),
    "provider": inline_serializer("BillingProvider", {"configured": serializers.BooleanField(),
                                                      "setting": serializers.CharField()}),
    "plans": inline_serializer("BillingPlan", {"id": serializers.CharField(), "instances": serializers.IntegerField(),
                                               "purchasable": serializers.BooleanField()}, many=True),
})

UsageCapSerializer = inline_serializer("UsageCap", {
    "amount": serializers.IntegerField(allow_null=True), "currency": serializers.CharField(),
    "spend_this_period": serializers.IntegerField(), "percent_used": serializers.FloatField(allow_null=True),
    "reached": serializers.BooleanField(help_text="true: new deployments are refused (402) from now on"),
    "period_end": serializers.DateTimeField(), "message": serializers.CharField()})


class UsageCapInput(InputSerializer):
    amount = serializers.IntegerField(allow_null=True, min_value=0, max_value=caps.CAP_MAX,
                                      help_text="monthly spend cap in minor units; null removes it")


class PaymentMethodSerializer(serializers.Serializer):
    id = serializers.CharField()
    brand = serializers.CharField()
    last4 = serializers.CharField()
    exp_month = serializers.IntegerField(allow_null=True)
    exp_year = serializers.IntegerField(allow_null=True)
    default = serializers.BooleanField()


SetupIntentSerializer = inline_serializer("SetupIntent", {
    "id": serializers.CharField(),
    "client_secret": serializers.CharField(help_text="for the provider's card element in the browser")})


class SubscriptionInput(InputSerializer):
    plan = serializers.CharField(max_length=32, help_text="a paid plan of PLANS, e.g. pro")


SubscriptionCanceledSerializer = inline_serializer("SubscriptionCanceled", {
    "cancel_at_period_end": serializers.BooleanField(), "current_period_end": serializers.DateTimeField(allow_null=True)})


class InvoiceSerializer(ModelSerializer):
    pdf_url = serializers.CharField(allow_blank=True)
    lines = serializers.SerializerMethodField()

    class Meta:
        model = Invoice
        fields = ("id", "number", "kind", "status", "total", "currency", "period_start", "period_end", "pdf_url",
                  "hosted_url", "payment_failed_at", "paid_at", "lines", "created_at")

    def get_lines(self, obj) -> list[dict]:
        return [{"description": line.get("description", ""), "quantity": line.get("quantity"),
                 "unit": line.get("unit", ""), "amount": line.get("amount", 0)} for line in obj.lines]


class TaxIdSerializer(ModelSerializer):
    class Meta:
        model = TaxId
        fields = ("id", "type", "value", "country", "created_at")


class TaxIdInput(InputSerializer):
    type = field_with_schema({"type": "string", "enum": list(TYPES)})(max_length=16)
    value = serializers.CharField(max_length=64)


class AddressInput(InputSerializer):
    # `line1`/`line2` on the wire: the camelCase parser reads a digit as a word (`line_1`)
    line_1 = serializers.CharField(max_length=200)
    line_2 = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    city = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    postal_code = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    state = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    country = serializers.CharField(max_length=2, min_length=2, help_text="ISO 3166-1 alpha-2, e.g. DE")


class EmailInput(InputSerializer):
    email = serializers.CharField(max_length=254)


Deleted = inline_serializer("BillingDeleted", {"id": serializers.CharField(), "deleted": serializers.BooleanField()})


class BillingView(PlatformView):
    @endpoint(scope="billing", response=BillingSerializer, summary="Plan, status, period spend, cap and contacts")
    def get(self, request, org_id):
        return Response(services.billing_summary(workspace=self.workspace))


class UsageCapView(PlatformView):
    @endpoint(scope="billing", status=201, request=UsageCapInput, response=UsageCapSerializer,
              summary="Set the monthly usage cap (null removes it)",
              description="From 100 % of it new deployments and component deploys are refused with 402 "
                          "`usage_cap_reached` until it is raised or the period ends. A cap at or below this "
                          "period's spend is accepted: `reached` is true and deploys stop at once.")
    def post(self, request, org_id):
        v = validated(UsageCapInput, request)
        state = caps.usage_cap_set(workspace=self.workspace, amount=v["amount"], actor=request.user, ip=self.ip)
        return Response(state, status=201)


class PaymentMethodListView(PlatformView):
    @endpoint(scope="billing", response=PaymentMethodSerializer(many=True), errors=(409, 502),
              summary="The customer's cards, as the payments provider holds them")
    def get(self, request, org_id):
        items = services.payment_methods_list(workspace=self.workspace)
        return Response({"items": PaymentMethodSerializer(items, many=True).data, "next_cursor": None})


class SetupIntentView(PlatformView):
    @endpoint(scope="billing", status=201, request=None, response=SetupIntentSerializer, errors=(502,),
              summary="Start adding a card: the client secret for the provider's card element",
              description="The card goes from the browser to the provider; this platform never sees it.")
    def post(self, request, org_id):
        intent = services.setup_intent_create(workspace=self.workspace, actor=request.user, ip=self.ip)
        return Response(intent, status=201)


class PaymentMethodDefaultView(PlatformView):
    @endpoint(scope="billing", status=201, request=None, response=PaymentMethodSerializer, errors=(502,),
              summary="Charge invoices and the subscription to this card",
              description="A payment method of another customer is 404.")
    def post(self, request, org_id, pm_id):
        pm = services.payment_method_default(workspace=self.workspace, payment_method_id=pm_id, actor=request.user,
                                             ip=self.ip)
        return Response(PaymentMethodSerializer(pm).data, status=201)


class PaymentMethodDetailView(PlatformView):
    @endpoint(scope="billing", response=Deleted, errors=(502,), summary="Remove a card (detached at the provider)")
    def delete(self, request, org_id, pm_id):
        pm = services.payment_method_delete(workspace=self.workspace, payment_method_id=pm_id, actor=request.user,
                                            ip=self.ip)
        return Response({"id": pm["id"], "deleted": True})


class SubscriptionView(PlatformView):
    @endpoint(scope="billing", status=201, request=SubscriptionInput, response=BillingSerializer, errors=(402, 502),
              summary="Subscribe to a paid plan (or change it)",
              description="Charged to the default card (409 `payment_method_required` without one; 402 "
                          "`payment_failed` when declined). The workspace's plan follows the provider's subscription.")
    def post(self, request, org_id):
        v = validated(SubscriptionInput, request)
        summary = services.subscription_start(workspace=self.workspace, plan=v["plan"], actor=request.user,
                                              ip=self.ip)
        return Response(summary, status=201)

    @endpoint(scope="billing", response=SubscriptionCanceledSerializer, errors=(502,),
              summary="Cancel at the end of the paid period")
    def delete(self, request, org_id):
        return Response(services.subscription_cancel(workspace=self.workspace, actor=request.user, ip=self.ip))


class InvoiceListView(PlatformView):
    @endpoint(scope="billing", response=InvoiceSerializer(many=True), summary="Invoices, newest first, with lines")
    def get(self, request, org_id):
        return cursor_page(request, services.invoices_list(workspace=self.workspace), InvoiceSerializer)


class InvoiceDetailView(PlatformView):
    @endpoint(scope="billing", response=InvoiceSerializer, summary="One invoice with its lines and PDF link")
    def get(self, request, org_id, invoice_id):
        return Response(InvoiceSerializer(services.invoice_get(workspace=self.workspace, invoice_id=invoice_id)).data)


class TaxIdListView(PlatformView):
    @endpoint(scope="billing", response=TaxIdSerializer(many=True), summary="Tax ids of the workspace's customer")
    def get(self, request, org_id):
        return cursor_page(request, services.tax_ids_list(workspace=self.workspace), TaxIdSerializer)

    @endpoint(scope="billing", status=201, request=TaxIdInput, response=TaxIdSerializer, errors=(502,),
              summary="Add a tax id (checked by format for its country first)",
              description="A value not in its type's format is 400 naming the rule it breaks (`details.rule`: "
                          "format, length, checksum or component) and nothing is sent.")
    def post(self, request, org_id):
        v = validated(TaxIdInput, request)
        tax_id = services.tax_id_add(workspace=self.workspace, type=v["type"], value=v["value"], actor=request.user,
                                     ip=self.ip)
        return Response(TaxIdSerializer(tax_id).data, status=201)


class TaxIdDetailView(PlatformView):
    @endpoint(scope="billing", response=Deleted, errors=(502,), summary="Remove a tax id")
    def delete(self, request, org_id, tax_id_id):
        tax_id = services.tax_id_delete(workspace=self.workspace, tax_id_id=tax_id_id, actor=request.user, ip=self.ip)
        return Response({"id": tax_id.pk, "deleted": True})


class AddressView(PlatformView):
    @endpoint(scope="billing", request=AddressInput, response=AddressSerializer, errors=(502,),
              summary="Set the billing address")
    def put(self, request, org_id):
        v = validated(AddressInput, request)
        address = {**v, "line1": v.pop("line_1"), "line2": v.pop("line_2")}
        return Response(services.address_set(workspace=self.workspace, address=address, actor=request.user,
                                             ip=self.ip))


class EmailView(PlatformView):
    @endpoint(scope="billing", request=EmailInput, response=inline_serializer("BillingEmail", {
        "email": serializers.CharField()}), errors=(502,), summary="Set the billing email")
    def put(self, request, org_id):
        v = validated(EmailInput, request)
        return Response({"email": services.email_set(workspace=self.workspace, email=v["email"], actor=request.user,
                                                     ip=self.ip)})
