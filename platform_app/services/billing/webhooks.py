"""The payments provider's webhook (`POST /v1/webhooks/payments`): the signature is checked over the raw body first
(Stripe's scheme, provider.signature_valid; anything wrong → 401 and nothing changes), then the event is applied
once: its id is stored in the same transaction as its effects, so a replay is acknowledged and does nothing.

Applied: `invoice.*` (the invoice mirrored; `invoice.paid` marks it paid, `invoice.payment_failed` records the
first failure and mails a dunning notice to the owners and billing members: the workspace is `past_due` when it
is still unpaid BILLING_PAST_DUE_GRACE_DAYS later), `customer.subscription.*` (the subscription and the
workspace's plan), only for the account's current subscription and in the order the provider made them (an event
older than the state last applied, or about a subscription that already ended, is recorded and ignored). Other
types are acknowledged and recorded. The objects are checked field by field (`payloads.py`): a malformed one is
400 and changes nothing."""
import json
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import Unauthenticated, ValidationFailed
from platform_app.models import BillingAccount, Invoice, PaymentEvent
from platform_app.services.billing import meters, provider
from platform_app.services.billing.billing import ENDED, subscription_apply
from platform_app.services.billing.invoices import invoice_fields
from platform_app.services.billing.notices import notice_send
from platform_app.services.billing.payloads import LAST_SECOND, InvoiceObject, SubscriptionObject, payload, when
from platform_app.services.teams.audit import audit_record

STATUS_RANK = {"draft": 0, "open": 1, "uncollectible": 2, "paid": 3, "void": 3}


def payments_webhook_receive(*, body: bytes, signature: str, now: float | None = None) -> dict:
    if not provider.signature_valid(body=body, header=signature, secret=settings.PAYMENTS_WEBHOOK_SECRET,
                                    tolerance=settings.PAYMENTS_WEBHOOK_TOLERANCE_SECONDS, now=now):
        raise Unauthenticated("The payment-signature header is missing, old or does not match.",
                              code="invalid_signature")
    try:
        event = json.loads(body)
    except ValueError:
        raise ValidationFailed("The webhook body is not JSON.", code="malformed_json")
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not event["id"] \
            or not isinstance(event.get("type"), str) or len(event["id"]) > 100:
        raise ValidationFailed("The body is not an event (`id`, `type`, `data.object`).",
                               details={"id": ["Required."], "type": ["Required."]})
    obj = (event.get("data") or {}).get("object") if isinstance(event.get("data"), dict) else None
    obj = obj if isinstance(obj, dict) else {}
    created = event.get("created")
    if created is not None and (type(created) is not int or not 0 < created <= LAST_SECOND):
        raise ValidationFailed("The event's `created` is not a time.", details={"created": ["Unix seconds."]})
    try:
        with transaction.atomic():
            record = PaymentEvent.objects.create(event_id=event["id"], type=event["type"][:64])
            workspace, result = _apply(event["type"], obj, when(created))
            record.workspace, record.result = workspace, result[:200]
            record.save(update_fields=["workspace", "result"])
    except IntegrityError:
        return {"received": True, "event": event["id"], "type": event["type"], "duplicate": True}
    return {"received": True, "event": event["id"], "type": event["type"], "result": result}


def _account(customer_id) -> BillingAccount | None:
    if not isinstance(customer_id, str) or not customer_id:
        return None
    return (BillingAccount.objects.select_for_update().select_related("workspace")
            .filter(customer_id=customer_id).first())


def _apply(kind: str, obj: dict, created: datetime | None):
    if kind.startswith("invoice."):
        return _invoice_event(kind, payload(InvoiceObject, obj, "invoice"))
    if kind.startswith("customer.subscription."):
        return _subscription_event(payload(SubscriptionObject, obj, "subscription"), created)
    return None, "ignored"


def _subscription_event(obj: dict, created: datetime | None):
    account = _account(obj.get("customer"))
    if account is None:
        return None, "unknown customer: ignored"
    if account.subscription_id and obj["id"] != account.subscription_id:  # an earlier one of the same customer
        return account.workspace, "another subscription: ignored"
    if created and account.subscription_event_at and created < account.subscription_event_at:
        return account.workspace, "an older event: ignored"
    if account.subscription_id and account.subscription_status in ENDED:
        return account.workspace, "an ended subscription: ignored"
    subscription_apply(account=account, subscription=obj, at=created)
    return account.workspace, f"subscription {account.subscription_status}"


def _invoice_event(kind: str, obj: dict):
    account = _account(obj.get("customer"))
    if account is None:
        return None, "unknown customer: ignored"
    workspace = account.workspace
    invoice = Invoice.objects.select_for_update().filter(provider_id=obj["id"]).first()
    if invoice is None:  # the subscription's own invoices are made by the provider: mirror them
        start = when(obj.get("period_start")) or timezone.now()
        invoice = Invoice(workspace=workspace, kind=Invoice.Kind.SUBSCRIPTION, provider_id=obj["id"],
                          currency=obj.get("currency") or settings.BILLING_CURRENCY, period_start=start,
                          period_end=when(obj.get("period_end")) or start,
                          lines=[{"description": line.get("description") or "", "quantity": line.get("quantity"),
                                  "amount": line["amount"]} for line in (obj.get("lines") or {}).get("data", [])])
    if invoice.workspace_id != workspace.pk:
        return None, "invoice of another customer: ignored"
    fields = invoice_fields(obj)
    if STATUS_RANK.get(fields["status"], 1) < STATUS_RANK.get(invoice.status, 0):
        fields.pop("status")  # an older event arriving late never undoes a payment
    for name, value in fields.items():
        setattr(invoice, name, value)
    now = timezone.now()
    if kind == "invoice.paid":
        invoice.status, invoice.paid_at = "paid", invoice.paid_at or now
    result = f"invoice {invoice.status}"
    if kind == "invoice.payment_failed" and invoice.status != "paid":
        first = invoice.payment_failed_at is None
        invoice.payment_failed_at = invoice.payment_failed_at or now
        past_due_at = invoice.payment_failed_at + timedelta(days=settings.BILLING_PAST_DUE_GRACE_DAYS)
        amount = meters.money(obj["amount_due"] if obj.get("amount_due") is not None else invoice.total,
                              invoice.currency)
        link = invoice.hosted_url or invoice.pdf_url
        invoice.save()
        notice_send(workspace=workspace, subject=f"Payment failed for invoice {invoice.number or invoice.pk}",
                    body=(f"We could not charge {amount} for invoice {invoice.number or invoice.pk}. Update the "
                          f"payment method on the workspace's Billing page; the provider retries the charge. If it "
                          f"is still unpaid on {past_due_at:%Y-%m-%d} the workspace is past due."
                          + (f"\n\nInvoice: {link}" if link else "")))
        audit_record(workspace=workspace, actor=None, action="billing.payment_failed", target=invoice,
                     data={"invoice": invoice.provider_id, "first": first})
        result = "payment failed: dunning notice sent"
    invoice.save()
    return workspace, result
