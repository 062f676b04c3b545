"""`POST /v1/webhooks/payments`: Stripe's signature scheme computed here with hmac as Stripe documents it. A bad,
old, future or missing signature is 401 and changes nothing; several `v1` values are allowed (a secret roll); a
replayed event id is acknowledged and applied once."""
import json
import time

import pytest

from platform_app.models import Invoice, PaymentEvent
from tests.platform_app.billing.factories import BillingAccountFactory, InvoiceFactory
from tests.platform_app.billing.fake_stripe import WEBHOOK_SECRET, event, sign

pytestmark = pytest.mark.django_db

URL = "/v1/webhooks/payments"


@pytest.fixture
def secret(settings):
    settings.PAYMENTS_WEBHOOK_SECRET = WEBHOOK_SECRET
    return WEBHOOK_SECRET


@pytest.fixture
def invoice(workspace):
    BillingAccountFactory(workspace=workspace, customer_id="cus_hook")
    return InvoiceFactory(workspace=workspace, provider_id="in_hook", status="open")


def post(api, body: bytes, signature: str | None):
    headers = {"HTTP_PAYMENT_SIGNATURE": signature} if signature is not None else {}
    return api.post(URL, body, content_type="application/json", **headers)


def paid(invoice_id="in_hook", event_id="evt_1") -> bytes:
    return event("invoice.paid", {"id": invoice_id, "object": "invoice", "customer": "cus_hook", "status": "paid",
                                  "total": 1234, "currency": "usd"}, event_id)


@pytest.mark.parametrize("make", [
    lambda body: None,  # missing
    lambda body: "",
    lambda body: sign(body, secret="whsec_someone_else"),
    lambda body: sign(body, timestamp=int(time.time()) - 301),  # older than the tolerance
    lambda body: sign(body, timestamp=int(time.time()) + 301),  # from the future
    lambda body: sign(body + b" "),  # another body
    lambda body: sign(body).replace("v1=", "v0="),  # another scheme
    lambda body: f"t={int(time.time())}",  # no signature
    lambda body: "v1=" + sign(body).split("v1=")[1],  # no timestamp
    lambda body: "t=abc,v1=ff",
    lambda body: sign(body)[:-1] + "é",
], ids=["missing", "empty", "other-secret", "old", "future", "other-body", "v0", "no-v1", "no-t", "garbage",
        "non-ascii"])
def test_bad_signatures_are_401_and_change_nothing(api, secret, invoice, make):
    body = paid()
    resp = post(api, body, make(body))
    assert resp.status_code == 401, resp.content
    assert resp.json()["code"] == "invalid_signature" and set(resp.json()) == {"code", "message", "details", "status"}
    invoice.refresh_from_db()
    assert invoice.status == "open" and not PaymentEvent.objects.exists()


def test_without_a_configured_secret_every_delivery_is_401(api, settings, invoice):
    settings.PAYMENTS_WEBHOOK_SECRET = ""
    body = paid()
    assert post(api, body, sign(body)).status_code == 401
    assert not PaymentEvent.objects.exists()


def test_one_of_several_v1_values_may_match(api, secret, invoice):
    body = paid()
    resp = post(api, body, sign(body, extra_v1=("0" * 64, "deadbeef")))
    assert resp.status_code == 200, resp.json()
    invoice.refresh_from_db()
    assert invoice.status == "paid" and invoice.paid_at is not None


def test_a_signature_within_the_tolerance_passes(api, secret, invoice):
    body = paid()
    assert post(api, body, sign(body, timestamp=int(time.time()) - 290)).status_code == 200


def test_a_replayed_event_is_acknowledged_and_applied_once(api, secret, invoice):
    body = paid()
    first = post(api, body, sign(body))
    assert first.status_code == 200 and "duplicate" not in first.json()
    paid_at = Invoice.objects.get().paid_at
    again = post(api, body, sign(body))
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert Invoice.objects.get().paid_at == paid_at
    assert PaymentEvent.objects.get().result == "invoice paid"


def test_signed_bodies_that_are_not_events_are_400(api, secret, invoice):
    for body in (b"not json", b"[]", json.dumps({"type": "invoice.paid"}).encode()):
        resp = post(api, body, sign(body))
        assert resp.status_code == 400, body
    assert not PaymentEvent.objects.exists()


def test_unknown_types_and_customers_are_recorded_and_ignored(api, secret, invoice):
    other = event("charge.refunded", {"id": "ch_1", "customer": "cus_hook"}, "evt_other")
    assert post(api, other, sign(other)).json()["result"] == "ignored"
    stranger = paid(event_id="evt_stranger").replace(b"cus_hook", b"cus_unknown")
    assert post(api, stranger, sign(stranger)).json()["result"] == "unknown customer: ignored"
    assert Invoice.objects.get().status == "open" and PaymentEvent.objects.count() == 2


def test_an_invoice_id_of_another_customer_is_not_touched(api, secret, invoice):
    from tests.factories import WorkspaceFactory

    other = WorkspaceFactory()
    BillingAccountFactory(workspace=other, customer_id="cus_other")
    body = paid(event_id="evt_cross").replace(b"cus_hook", b"cus_other")
    assert post(api, body, sign(body)).json()["result"] == "invoice of another customer: ignored"
    assert Invoice.objects.get().status == "open"


def subscription_event(kind: str, status: str, *, subscription="sub_current", created: int, event_id: str) -> bytes:
    obj = {"id": subscription, "object": "subscription", "customer": "cus_hook", "status": status,
           "items": {"data": [{"id": "si_1", "price": {"id": "price_pro_monthly"}}]}}
    body = json.loads(event(kind, obj, event_id))
    body["created"] = created
    return json.dumps(body).encode()


@pytest.fixture
def subscribed(workspace, settings):
    """The workspace on pro through its current subscription `sub_current`."""
    from platform_app.models import BillingAccount

    settings.BILLING_PLAN_PRICE_IDS = {"pro": "price_pro_monthly", "enterprise": ""}
    BillingAccount.objects.filter(workspace=workspace).update(subscription_id="sub_current", subscription_status="active",
                                                              subscription_plan="pro")
    workspace.plan = "pro"
    workspace.save(update_fields=["plan"])
    return workspace


def test_an_event_of_another_subscription_of_the_customer_changes_nothing(api, secret, invoice, subscribed):
    old = subscription_event("customer.subscription.deleted", "canceled", subscription="sub_old",
                             created=int(time.time()), event_id="evt_old_deleted")
    resp = post(api, old, sign(old))
    assert resp.status_code == 200 and resp.json()["result"] == "another subscription: ignored"
    subscribed.refresh_from_db()
    assert subscribed.plan == "pro" and subscribed.billing_account.subscription_status == "active"


def test_subscription_events_apply_in_the_order_they_were_created(api, secret, invoice, subscribed):
    now = int(time.time())
    deleted = subscription_event("customer.subscription.deleted", "canceled", created=now, event_id="evt_deleted")
    assert post(api, deleted, sign(deleted)).json()["result"] == "subscription canceled"
    late = subscription_event("customer.subscription.updated", "active", created=now - 60, event_id="evt_late")
    resp = post(api, late, sign(late))
    assert resp.status_code == 200 and resp.json()["result"] == "an older event: ignored"
    subscribed.refresh_from_db()
    assert subscribed.plan == "free" and subscribed.billing_account.subscription_status == "canceled"
    # an ended subscription does not come back, even by an event of the same second
    same_second = subscription_event("customer.subscription.updated", "active", created=now, event_id="evt_same")
    assert post(api, same_second, sign(same_second)).json()["result"] == "an ended subscription: ignored"
    subscribed.refresh_from_db()
    assert subscribed.plan == "free"


@pytest.mark.parametrize("kind, obj, field", [
    ("invoice.paid", {"lines": [1]}, "lines"),
    ("invoice.paid", {"lines": {"data": [5]}}, "lines"),
    ("invoice.paid", {"lines": {"data": [{"amount": "x"}]}}, "lines"),
    ("invoice.paid", {"period_start": 10 ** 20}, "periodStart"),
    ("invoice.paid", {"total": "a lot"}, "total"),
    ("invoice.paid", {"status": ["paid"]}, "status"),
    ("customer.subscription.updated", {"items": [1]}, "items"),
    ("customer.subscription.updated", {"items": {"data": [5]}}, "items"),
    ("customer.subscription.updated", {"current_period_end": 10 ** 20}, "currentPeriodEnd"),
    ("customer.subscription.updated", {"status": {"x": 1}}, "status"),
], ids=["lines-list", "lines-int", "line-amount", "period-start", "total", "status", "items-list", "items-int",
        "period-end", "subscription-status"])
def test_a_signed_event_whose_object_is_malformed_is_400_and_changes_nothing(api, secret, invoice, subscribed, kind,
                                                                              obj, field):
    base = ({"id": "in_new", "object": "invoice", "customer": "cus_hook", "status": "paid"} if kind.startswith("invoice")
            else {"id": "sub_current", "object": "subscription", "customer": "cus_hook", "status": "canceled"})
    body = event(kind, {**base, **obj}, "evt_malformed")
    resp = post(api, body, sign(body))
    assert resp.status_code == 400 and field in resp.json()["details"], resp.json()
    assert not PaymentEvent.objects.exists() and Invoice.objects.count() == 1
    subscribed.refresh_from_db()
    assert subscribed.plan == "pro"
