"""Monthly usage invoices: once a period has ended (and its last hours are metered), each workspace with a
customer at the provider and a non-zero cost gets one invoice with an item per cost category, finalised at the
provider, which charges the default payment method and reports the outcome by webhook.

The local `Invoice` row (one per workspace and period, a unique constraint) is made first and records each step
as it succeeds (the provider's invoice, each item, the finalisation); the provider calls carry idempotency keys
made from that row. A run that fails half-way leaves the row for the next run, which goes on from there: nothing
is invoiced twice."""
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import ApplicationError
from platform_app.models import BillingAccount, Invoice, Workspace
from platform_app.services.billing import meters, provider
from platform_app.services.billing.cost import cost_compute

logger = logging.getLogger(__name__)


def invoice_fields(invoice: dict) -> dict:
    """What the provider's invoice says that the row mirrors."""
    status = invoice.get("status") or "draft"
    fields = {"number": invoice.get("number") or "", "status": status, "pdf_url": invoice.get("invoice_pdf") or "",
              "hosted_url": invoice.get("hosted_invoice_url") or ""}
    if isinstance(invoice.get("total"), int):
        fields["total"] = invoice["total"]
    if invoice.get("currency"):
        fields["currency"] = invoice["currency"]
    return fields


def _lines(cost) -> list[dict]:
    lines = []
    for category in meters.CATEGORIES:
        amount = cost.by_category[category]
        if amount <= 0:
            continue
        description, unit, _ = meters.CATEGORY_UNITS[category]
        quantity = round(cost.quantities[category], 3)
        lines.append({"category": category, "description": f"{description} {cost.start:%Y-%m}", "quantity": quantity,
                      "unit": unit, "amount": amount, "provider_item_id": ""})
    return lines


def invoice_build(*, workspace, period_start: datetime, now: datetime | None = None) -> Invoice | None:
    """The workspace's usage invoice of the period starting at `period_start`, made and finalised at the provider
    (or carried on from where an earlier run stopped); None when the period cost nothing or there is no
    customer. Provider failures raise (the row stays for the next run)."""
    now = now or timezone.now()
    start, end = meters.period_bounds(period_start)
    account = BillingAccount.objects.filter(workspace=workspace).exclude(customer_id="").first()
    if account is None:
        return None
    invoice = Invoice.objects.filter(workspace=workspace, kind=Invoice.Kind.USAGE, period_start=start).first()
    if invoice is None:
        cost = cost_compute(workspace=workspace, start=start, end=end, now=now, detail=False)
        if cost.total <= 0:
            return None
        try:
            with transaction.atomic():
                invoice = Invoice.objects.create(workspace=workspace, kind=Invoice.Kind.USAGE, period_start=start,
                                                 period_end=end, currency=cost.currency, total=cost.total,
                                                 lines=_lines(cost))
        except IntegrityError:  # another run made it first
            invoice = Invoice.objects.get(workspace=workspace, kind=Invoice.Kind.USAGE, period_start=start)
    if invoice.status != "draft":
        return invoice
    return _send(invoice, account)


def _send(invoice: Invoice, account: BillingAccount) -> Invoice:
    period = (int(invoice.period_start.timestamp()), int(invoice.period_end.timestamp()))
    if not invoice.provider_id:
        made = provider.invoice_create(customer_id=account.customer_id, currency=invoice.currency,
                                       description=f"Usage {invoice.period_start:%Y-%m}",
                                       metadata={"workspace_id": invoice.workspace_id, "invoice_id": invoice.pk},
                                       key=f"usage-invoice-{invoice.pk}")
        invoice.provider_id = made["id"]
        invoice.save(update_fields=["provider_id", "updated_at"])
    for line in invoice.lines:
        if line.get("provider_item_id"):
            continue
        item = provider.invoice_item_create(customer_id=account.customer_id, invoice_id=invoice.provider_id,
                                            amount=line["amount"], currency=invoice.currency,
                                            description=f"{line['description']}: {line['quantity']} {line['unit']}",
                                            period=period, key=f"usage-item-{invoice.pk}-{line['category']}")
        line["provider_item_id"] = item["id"]
        invoice.save(update_fields=["lines", "updated_at"])
    finalised = provider.invoice_finalize(invoice_id=invoice.provider_id)
    fields = invoice_fields(finalised)
    if fields["status"] == "draft":
        fields["status"] = "open"
    with transaction.atomic():
        row = Invoice.objects.select_for_update().get(pk=invoice.pk)
        if row.status in ("draft", "open"):  # a webhook may have said `paid` already
            for name, value in fields.items():
                setattr(row, name, value)
            row.save()
    return row


def invoices_build(*, now: datetime | None = None) -> int:
    """Beat: the previous period's usage invoices, once its last hours are metered; how many were finalised."""
    now = now or timezone.now()
    if not provider.configured():
        return 0
    current, _ = meters.period_bounds(now)
    previous, _ = meters.previous_period(current)
    if now < current + timedelta(hours=settings.BILLING_METER_LOOKBACK_HOURS + 1):
        return 0
    done = 0
    for workspace in Workspace.objects.filter(billing_account__customer_id__gt="").order_by("pk"):
        try:
            invoice = invoice_build(workspace=workspace, period_start=previous, now=now)
        except ApplicationError as exc:
            logger.warning("usage invoice of %s for %s not finished: %s", workspace.pk, f"{previous:%Y-%m}",
                           exc.message)
            continue
        done += invoice is not None and invoice.status != "draft"
    return done
