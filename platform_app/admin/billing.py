"""Admin of billing: the price book (editable: a new price is a new row with its validity), usage records, billing
accounts, invoices, tax ids, the provider's webhook events and deployments' visits (read-only mirrors)."""
from django import forms
from django.contrib import admin

from platform_app.models import BillingAccount, DeploymentVisit, Invoice, PaymentEvent, Price, TaxId, UsageRecord
from platform_app.services.billing.prices import price_overlap


class PriceForm(forms.ModelForm):
    class Meta:
        model = Price
        fields = ("meter", "unit_amount", "unit_size", "unit_label", "currency", "valid_from", "valid_until")

    def clean(self):
        data = super().clean()
        if data.get("meter") and data.get("valid_from"):
            other = price_overlap(meter=data["meter"], valid_from=data["valid_from"],
                                  valid_until=data.get("valid_until"), exclude_pk=self.instance.pk)
            if other is not None:
                raise forms.ValidationError(f"{other} is valid from {other.valid_from:%Y-%m-%d %H:%M} in the same "
                                            f"span: end it first (valid until), then add the new price.")
        return data


@admin.register(Price)
class PriceAdmin(admin.ModelAdmin):
    form = PriceForm
    list_display = ("meter", "unit_amount", "currency", "unit_size", "unit_label", "valid_from", "valid_until")
    list_filter = ("meter", "currency")
    search_fields = ("meter", "unit_label")


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(UsageRecord)
class UsageRecordAdmin(ReadOnly):
    list_display = ("hour", "workspace", "project_ref", "project_name", "meter", "quantity")
    list_filter = ("meter",)
    search_fields = ("project_ref", "project_name", "workspace__slug")
    list_select_related = ("workspace",)
    date_hierarchy = "hour"


@admin.register(BillingAccount)
class BillingAccountAdmin(admin.ModelAdmin):
    list_display = ("workspace", "customer_id", "subscription_plan", "subscription_status", "usage_cap", "email")
    search_fields = ("workspace__slug", "customer_id", "subscription_id", "email")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)
    readonly_fields = ("customer_id", "subscription_id", "subscription_item_id", "subscription_status",
                       "subscription_plan", "cancel_at_period_end", "subscription_period_end",
                       "default_payment_method_id", "cap_notice_80_period", "cap_notice_100_period", "created_at",
                       "updated_at")


@admin.register(Invoice)
class InvoiceAdmin(ReadOnly):
    list_display = ("id", "workspace", "kind", "number", "status", "total", "currency", "period_start",
                    "payment_failed_at", "paid_at")
    list_filter = ("kind", "status")
    search_fields = ("id", "number", "provider_id", "workspace__slug")
    list_select_related = ("workspace",)


@admin.register(TaxId)
class TaxIdAdmin(ReadOnly):
    list_display = ("id", "workspace", "type", "value", "country", "created_at")
    search_fields = ("value", "workspace__slug")
    list_select_related = ("workspace",)


@admin.register(PaymentEvent)
class PaymentEventAdmin(ReadOnly):
    list_display = ("event_id", "type", "workspace", "result", "received_at")
    list_filter = ("type",)
    search_fields = ("event_id",)


@admin.register(DeploymentVisit)
class DeploymentVisitAdmin(ReadOnly):
    list_display = ("deployment", "first_at")
    raw_id_fields = ("deployment",)
