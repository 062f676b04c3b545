"""The whole billing cycle through the HTTP API, the official `stripe` library and a local server speaking Stripe's
wire format: setup intent → a card (what Stripe.js does) → default payment method → subscription → metered usage →
the monthly invoice built by the beat task → `invoice.payment_failed` (dunning) and `invoice.paid` webhooks signed
with Stripe's scheme → cancellation at the period end → the subscription's end."""
from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail

from platform_app.models import AuditEvent, GrowthEvent, Invoice, PaymentEvent, Workspace
from platform_app.tasks.billing import invoices_build
from tests.platform_app.billing.factories import UsageRecordFactory
from tests.platform_app.billing.fake_stripe import API_KEY, event, sign
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

B = "/v1/orgs/acme/billing"
OCTOBER = datetime(2027, 10, 1, tzinfo=UTC)  # in the future: the clock is moved there, never back


def webhook(api, body: bytes, **headers):
    return api.post("/v1/webhooks/payments", body, content_type="application/json",
                    HTTP_PAYMENT_SIGNATURE=headers.get("signature", sign(body)))


def test_setup_intent_to_paid_invoice(as_user, api, alice, betty, workspace, stripe_server, time_machine,
                                      django_capture_on_commit_callbacks):
    time_machine.move_to(datetime(2027, 10, 20, 12, tzinfo=UTC), tick=True)
    alice_client = as_user(alice)  # tokens are made at the moved clock

    # A card: the setup intent's client secret goes to the provider's card element in the browser.
    resp = alice_client.post(f"{B}/payment-methods/setup-intent")
    assert resp.status_code == 201, resp.json()
    intent = resp.json()
    assert set(intent) == {"id", "clientSecret"} and intent["clientSecret"].startswith(intent["id"] + "_secret")
    (customer_id, customer), = stripe_server.customers.items()
    assert customer["email"] == "alice@example.com" and customer["metadata"] == {"workspace_id": workspace.pk}
    (_, path, form), = stripe_server.requests("POST", "/v1/setup_intents")
    assert form == {"customer": customer_id, "usage": "off_session", "payment_method_types[0]": "card"}
    assert stripe_server.requests("POST", "/v1/customers")  # made once, with our idempotency key
    pm_id = stripe_server.attach_card(customer_id)  # what Stripe.js does with the card

    listed = alice_client.get(f"{B}/payment-methods").json()
    assert listed == {"items": [{"id": pm_id, "brand": "visa", "last4": "4242", "expMonth": 12, "expYear": 2030,
                                 "default": False}], "nextCursor": None}
    resp = alice_client.post(f"{B}/payment-methods/{pm_id}/default")
    assert resp.status_code == 201 and resp.json()["default"] is True
    assert stripe_server.customers[customer_id]["invoice_settings"]["default_payment_method"] == pm_id

    # The subscription sets the workspace's plan.
    resp = alice_client.post(f"{B}/subscription", {"plan": "pro"}, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["plan"] == "pro" and body["status"] == "active" and body["defaultPaymentMethodId"] == pm_id
    assert body["subscription"]["cancelAtPeriodEnd"] is False
    assert GrowthEvent.objects.filter(event="subscribed", workspace=workspace).count() == 1  # the funnel's last step
    (_, _, form), = stripe_server.requests("POST", "/v1/subscriptions")
    assert form["items[0][price]"] == "price_pro_monthly" and form["default_payment_method"] == pm_id
    assert Workspace.objects.get().plan == "pro"

    # Usage of October, metered per hour, then the month's invoice from the beat task.
    project = ProjectFactory(workspace=workspace, name="Shop")
    for day in range(10):
        hour = OCTOBER + timedelta(days=day, hours=3)
        UsageRecordFactory(project=project, hour=hour, meter="build_seconds", quantity=600)  # 10 minutes
        UsageRecordFactory(project=project, hour=hour, meter="instance_seconds:pro", quantity=3600)
    UsageRecordFactory(project=project, hour=OCTOBER + timedelta(days=3), meter="edge_requests", quantity=2_000_000)
    time_machine.move_to(datetime(2027, 11, 1, 6, tzinfo=UTC), tick=True)
    alice_client = as_user(alice)
    invoices_build()
    invoice = Invoice.objects.get()
    assert (invoice.kind, invoice.status, invoice.total, invoice.currency) == ("usage", "open", 100 + 100 + 400, "usd")
    provider_invoice = stripe_server.invoices[invoice.provider_id]
    assert provider_invoice["status"] == "open" and provider_invoice["total"] == 600
    assert provider_invoice["metadata"] == {"workspace_id": workspace.pk, "invoice_id": invoice.pk}
    items = sorted((i["amount"], i["description"]) for i in stripe_server.items.values())
    assert items == [(100, "Build minutes 2027-10: 100.0 minutes"), (100, "Instance hours 2027-10: 10.0 hours"),
                     (400, "Edge requests 2027-10: 2000000.0 requests")]
    calls = len(stripe_server.log)
    invoices_build()  # again: nothing more is invoiced
    assert len(stripe_server.log) == calls and Invoice.objects.count() == 1

    listed = alice_client.get(f"{B}/invoices").json()["items"]
    assert [i["id"] for i in listed] == [invoice.pk]
    one = alice_client.get(f"{B}/invoices/{invoice.pk}").json()
    assert one["number"] == provider_invoice["number"] and one["status"] == "open" and one["total"] == 600
    assert one["pdfUrl"] == f"https://pay.example.com/invoice/{invoice.provider_id}/pdf"
    assert one["periodStart"].startswith("2027-10-01T00:00:00") and one["periodEnd"].startswith("2027-11-01T00:00:00")
    assert {"description": "Build minutes 2027-10", "quantity": 100.0, "unit": "minutes", "amount": 100} in one["lines"]

    # The charge fails: a dunning notice to the owners and billing members; past due after the grace period.
    provider_invoice["attempt_count"] = 1
    with django_capture_on_commit_callbacks(execute=True):  # the notice is mailed once the event is stored
        resp = webhook(api, event("invoice.payment_failed", provider_invoice, "evt_failed_1"))
    assert resp.status_code == 200 and resp.json()["result"] == "payment failed: dunning notice sent"
    invoice.refresh_from_db()
    assert invoice.payment_failed_at is not None and invoice.status == "open"
    (notice,) = mail.outbox
    assert sorted(notice.to) == ["alice@example.com", "betty@example.com"]
    assert "Payment failed" in notice.subject and "6.00 USD" in notice.body
    assert alice_client.get(B).json()["status"] == "active"
    time_machine.move_to(datetime(2027, 11, 9, 6, tzinfo=UTC), tick=True)
    alice_client = as_user(alice)
    summary = alice_client.get(B).json()
    assert summary["status"] == "past_due" and summary["dunning"]["pastDue"] is True

    # Paid at last; the same event delivered again is acknowledged and applied once.
    provider_invoice["status"] = "paid"
    paid = event("invoice.paid", provider_invoice, "evt_paid_1")
    assert webhook(api, paid).json() == {"received": True, "event": "evt_paid_1", "type": "invoice.paid",
                                         "result": "invoice paid"}
    invoice.refresh_from_db()
    paid_at = invoice.paid_at
    assert invoice.status == "paid" and paid_at is not None
    assert alice_client.get(B).json()["status"] == "active"
    with django_capture_on_commit_callbacks(execute=True):
        replay = webhook(api, paid)
    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    invoice.refresh_from_db()
    assert invoice.paid_at == paid_at and PaymentEvent.objects.filter(event_id="evt_paid_1").count() == 1
    assert len(mail.outbox) == 1

    # Cancelled at the end of the paid period; the provider's `deleted` event ends the plan.
    resp = alice_client.delete(f"{B}/subscription")
    assert resp.status_code == 200 and resp.json()["cancelAtPeriodEnd"] is True
    subscription = next(iter(stripe_server.subscriptions.values()))
    assert subscription["cancel_at_period_end"] is True and Workspace.objects.get().plan == "pro"
    subscription["status"] = "canceled"
    assert webhook(api, event("customer.subscription.deleted", subscription)).status_code == 200
    assert Workspace.objects.get().plan == "free" and alice_client.get(B).json()["status"] == "canceled"
    assert {"billing.setup_intent_created", "billing.payment_method_default", "billing.subscribed",
            "billing.payment_failed", "billing.subscription_canceled"} <= set(
        AuditEvent.objects.values_list("action", flat=True))
    assert {r[0] for r in stripe_server.log} <= {"GET", "POST", "DELETE"}
    assert all(API_KEY not in str(form) for _, _, form in stripe_server.log)


def test_subscription_invoices_are_mirrored_from_webhooks(alice_client, api, workspace, stripe_server):
    alice_client.post(f"{B}/payment-methods/setup-intent")
    customer_id = next(iter(stripe_server.customers))
    obj = {"id": "in_sub_1", "object": "invoice", "customer": customer_id, "status": "paid", "number": "SUB-1",
           "total": 2000, "currency": "usd", "period_start": 1790000000, "period_end": 1792592000,
           "invoice_pdf": "https://pay.example.com/in_sub_1.pdf",
           "lines": {"object": "list", "data": [{"description": "Pro plan", "quantity": 1, "amount": 2000}]}}
    assert webhook(api, event("invoice.paid", obj)).status_code == 200
    (item,) = alice_client.get(f"{B}/invoices").json()["items"]
    assert (item["kind"], item["number"], item["status"], item["total"]) == ("subscription", "SUB-1", "paid", 2000)
    assert item["lines"] == [{"description": "Pro plan", "quantity": 1, "unit": "", "amount": 2000}]
    # an older event arriving late does not undo the payment
    assert webhook(api, event("invoice.finalized", {**obj, "status": "open"})).status_code == 200
    assert Invoice.objects.get().status == "paid"
