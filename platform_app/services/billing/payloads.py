"""The payments provider's objects as the webhook reads them. A signed body is still untrusted input: each field
the platform reads is checked for its type and range before anything is stored (400 naming the field otherwise);
fields it does not read pass unchecked."""
from datetime import UTC, datetime

from rest_framework import serializers

from config.errors import ValidationFailed

LAST_SECOND = 253402300799  # 9999-12-31T23:59:59Z: datetime's range
MONEY = 10 ** 15  # minor units


def unix(**kwargs):
    return serializers.IntegerField(min_value=1, max_value=LAST_SECOND, required=False, allow_null=True, **kwargs)


def when(value: int | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=UTC) if value else None


def _text(length: int):
    return serializers.CharField(max_length=length, required=False, allow_blank=True, allow_null=True)


class _InvoiceLine(serializers.Serializer):
    description = _text(500)
    quantity = serializers.IntegerField(min_value=0, max_value=MONEY, required=False, allow_null=True)
    amount = serializers.IntegerField(min_value=-MONEY, max_value=MONEY, required=False, default=0)


class _InvoiceLines(serializers.Serializer):
    data = serializers.ListField(child=_InvoiceLine(), max_length=1000, required=False, default=list)


class InvoiceObject(serializers.Serializer):
    id = serializers.CharField(max_length=100)
    customer = _text(100)
    status = serializers.ChoiceField(["draft", "open", "paid", "uncollectible", "void"], required=False)
    number = _text(100)
    currency = _text(3)
    total = serializers.IntegerField(min_value=-MONEY, max_value=MONEY, required=False, allow_null=True)
    amount_due = serializers.IntegerField(min_value=-MONEY, max_value=MONEY, required=False, allow_null=True)
    invoice_pdf = _text(2000)
    hosted_invoice_url = _text(2000)
    period_start = unix()
    period_end = unix()
    lines = _InvoiceLines(required=False)


class _Price(serializers.Serializer):
    id = _text(100)


class _SubscriptionItem(serializers.Serializer):
    id = _text(100)
    price = _Price(required=False)
    current_period_end = unix()


class _SubscriptionItems(serializers.Serializer):
    data = serializers.ListField(child=_SubscriptionItem(), max_length=100, required=False, default=list)


class SubscriptionObject(serializers.Serializer):
    id = serializers.CharField(max_length=100)
    customer = _text(100)
    status = serializers.CharField(max_length=32, required=False, allow_blank=True)
    cancel_at_period_end = serializers.BooleanField(required=False, default=False)
    current_period_end = unix()
    items = _SubscriptionItems(required=False)


def payload(serializer_class, obj: dict, what: str) -> dict:
    """The fields of `obj` the platform reads, checked; 400 naming each wrong one."""
    serializer = serializer_class(data=obj)
    if not serializer.is_valid():
        raise ValidationFailed(f"The event's object is not a valid {what}.", details=serializer.errors)
    return serializer.validated_data
