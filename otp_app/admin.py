"""Staff views of the OTP service. Code hashes and key hashes are never shown."""
from django import forms
from django.contrib import admin, messages
from django.db.models import OuterRef, Subquery, Sum

from config.errors import ValidationFailed
from otp_app.models import (ApiKey, Balance, Charge, Delivery, IdempotencyKey, OtpRecord, RoutingRule, SandboxMessage,
                            WorkspacePolicy)
from otp_app.services.balance import balance_amount, balance_top_up, balances_delete
from otp_app.services.number_types import REFUSED


class ApiKeyForm(forms.ModelForm):
    allowed_number_types = forms.TypedMultipleChoiceField(
        choices=[(kind, kind.replace("_", " ")) for kind in REFUSED], required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Number types refused by default that this key may send to.")

    class Meta:
        model = ApiKey
        fields = "__all__"


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = ("prefix", "name", "workspace", "mode", "created_at", "last_used_at", "revoked_at")
    list_filter = ("mode",)
    search_fields = ("prefix", "name", "workspace__slug")
    list_select_related = ("workspace",)
    exclude = ("key_hash",)
    readonly_fields = ("id", "prefix", "workspace", "mode", "created_at", "last_used_at")


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    can_delete = False
    readonly_fields = ("send_number", "channel", "status", "provider_message_id", "error", "tries", "created_at",
                       "updated_at")


@admin.register(OtpRecord)
class OtpRecordAdmin(admin.ModelAdmin):
    list_display = ("id", "workspace", "mode", "recipient", "channel", "status", "attempts_left", "sends",
                    "created_at", "expires_at")
    list_filter = ("status", "mode", "channel")
    search_fields = ("id", "recipient", "workspace__slug")
    list_select_related = ("workspace",)
    exclude = ("code_hash",)
    readonly_fields = ("id", "api_key", "workspace", "mode", "recipient", "locale", "channel", "route", "status",
                       "attempts_left", "sends", "created_at", "last_sent_at", "expires_at", "verified_at")
    inlines = [DeliveryInline]


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("record", "send_number", "channel", "status", "provider_message_id", "tries", "updated_at")
    list_filter = ("channel", "status")
    search_fields = ("record__id", "provider_message_id")
    raw_id_fields = ("record",)
    readonly_fields = ("created_at",)


MAX_ADJUSTMENT = 10 ** 15  # minor units at once: far above any real top-up, far below bigint's range


class BalanceForm(forms.ModelForm):
    adjust_by = forms.IntegerField(initial=0, min_value=-MAX_ADJUSTMENT, max_value=MAX_ADJUSTMENT,
                                   help_text="Added to the balance as it is when you save (negative: taken away); "
                                             "sends holding prices meanwhile are kept.")

    class Meta:
        model = Balance
        fields = ("workspace", "currency")

    def clean_adjust_by(self):
        adjust_by = self.cleaned_data["adjust_by"]
        if adjust_by < -(balance_amount(self.instance.workspace_id) if self.instance.pk else 0):
            raise forms.ValidationError("The balance cannot go below zero.")
        return adjust_by


@admin.register(Balance)
class BalanceAdmin(admin.ModelAdmin):
    """The amount is never written from the form: a top-up or a correction is a change by, applied to the balance
    as it is at that moment (balance_top_up, every purse locked), so a form loaded before some sends cannot give
    their holds back. The list shows a workspace's first purse, with the balance: the sum of its purses."""
    form = BalanceForm
    list_display = ("workspace", "balance", "currency", "updated_at")
    search_fields = ("workspace__slug",)
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)
    readonly_fields = ("balance", "updated_at")

    def get_queryset(self, request):
        # a workspace's first purse stands for its balance: the sum of all its purses
        purses = (Balance.objects.filter(workspace_id=OuterRef("workspace_id")).order_by()
                  .values("workspace_id").annotate(total=Sum("amount")).values("total"))
        return super().get_queryset(request).filter(purse=0).annotate(total=Subquery(purses))

    @admin.display(description="balance", ordering="total")
    def balance(self, obj):
        return getattr(obj, "total", None) if obj.pk else None

    def delete_model(self, request, obj):
        balances_delete(workspace_ids=[obj.workspace_id])

    def delete_queryset(self, request, queryset):
        balances_delete(workspace_ids=queryset.values("workspace_id"))

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields + (("workspace", "currency") if obj else ())

    def save_model(self, request, obj, form, change):
        if not change:
            obj.save()
        try:
            balance_top_up(workspace=obj.workspace, amount=form.cleaned_data["adjust_by"])
        except ValidationFailed as exc:
            messages.error(request, f"{exc.message} Nothing was changed.")
        obj.refresh_from_db()


@admin.register(Charge)
class ChargeAdmin(admin.ModelAdmin):
    list_display = ("workspace", "channel", "amount", "currency", "created_at")
    list_filter = ("channel",)
    search_fields = ("workspace__slug",)
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace", "delivery")


@admin.register(RoutingRule)
class RoutingRuleAdmin(admin.ModelAdmin):
    list_display = ("workspace", "country", "channels")
    search_fields = ("workspace__slug", "country")
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)


@admin.register(WorkspacePolicy)
class WorkspacePolicyAdmin(admin.ModelAdmin):
    list_display = ("workspace", "allowed_countries")
    search_fields = ("workspace__slug",)
    list_select_related = ("workspace",)
    raw_id_fields = ("workspace",)


@admin.register(SandboxMessage)
class SandboxMessageAdmin(admin.ModelAdmin):
    list_display = ("record", "channel", "recipient", "created_at")
    list_filter = ("channel",)
    search_fields = ("record__id", "recipient")
    raw_id_fields = ("api_key", "record")
    exclude = ("code",)


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(admin.ModelAdmin):
    list_display = ("key", "api_key", "record", "created_at")
    search_fields = ("key", "record__id", "api_key__prefix")
    list_select_related = ("api_key__workspace",)
    readonly_fields = ("api_key", "key", "request_hash", "record", "created_at")
