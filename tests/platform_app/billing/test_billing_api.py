"""Billing routes: who may manage billing (owners and billing members; developers and viewers 403), what the
routes answer without a payments provider (409 naming the setting; the summary, cap, invoices and tax ids held
still answer), tax ids checked by format before they are sent, another customer's payment method (404), address
and email, and the subscription's refusals."""
import pytest

from platform_app.models import AuditEvent, BillingAccount, TaxId
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.billing.factories import InvoiceFactory, TaxIdFactory

pytestmark = pytest.mark.django_db

B = "/v1/orgs/acme/billing"


def customer(client, stripe_server) -> str:
    assert client.post(f"{B}/payment-methods/setup-intent").status_code == 201
    return next(iter(stripe_server.customers))


# Roles ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method, path, body", [
    ("get", B, None), ("post", f"{B}/usage-cap", {"amount": 100}), ("get", f"{B}/payment-methods", None),
    ("post", f"{B}/payment-methods/setup-intent", {}), ("post", f"{B}/subscription", {"plan": "pro"}),
    ("delete", f"{B}/subscription", None), ("get", f"{B}/invoices", None), ("get", f"{B}/tax-ids", None),
    ("post", f"{B}/tax-ids", {"type": "eu_vat", "value": "DE136695976"}),
    ("put", f"{B}/address", {"line1": "1 Main St", "country": "DE"}), ("put", f"{B}/email", {"email": "a@b.co"}),
])
@pytest.mark.parametrize("role", ["developer", "viewer"])
def test_members_without_the_billing_scope_get_403(as_user, workspace, stripe_server, method, path, body, role):
    user = UserFactory()
    MembershipFactory(workspace=workspace, user=user, role=role)
    resp = getattr(as_user(user), method)(path, body, format="json")
    assert resp.status_code == 403, resp.content
    assert resp.json()["code"] == "forbidden" and resp.json()["details"]["requiredScope"] == "billing"
    assert not BillingAccount.objects.exists() and stripe_server.log == []


def test_a_billing_member_manages_billing_and_reads_cost(as_user, betty, stripe_server):
    client = as_user(betty)
    assert client.get(B).status_code == 200
    assert client.post(f"{B}/usage-cap", {"amount": 5000}, format="json").status_code == 201
    assert client.post(f"{B}/payment-methods/setup-intent").status_code == 201
    assert client.get("/v1/orgs/acme/cost/overview").status_code == 200


def test_a_billing_token_may_and_a_read_token_may_not(as_token, alice, workspace):
    assert as_token(alice, scopes=["billing"], workspace=workspace).get(B).status_code == 200
    resp = as_token(alice, scopes=["read"], workspace=workspace).get(B)
    assert resp.status_code == 403 and resp.json()["code"] == "insufficient_scope"


def test_another_workspace_is_404(as_user, charlie):
    assert as_user(charlie).get(B).status_code == 404
    assert as_user(charlie).post(f"{B}/usage-cap", {"amount": 1}, format="json").status_code == 404


# Without a payments provider -------------------------------------------------------------------------------------

@pytest.mark.parametrize("method, path, body", [
    ("get", f"{B}/payment-methods", None), ("post", f"{B}/payment-methods/setup-intent", {}),
    ("post", f"{B}/payment-methods/pm_1/default", {}), ("delete", f"{B}/payment-methods/pm_1", None),
    ("post", f"{B}/subscription", {"plan": "pro"}), ("delete", f"{B}/subscription", None),
    ("post", f"{B}/tax-ids", {"type": "eu_vat", "value": "DE136695976"}),
    ("put", f"{B}/address", {"line1": "1 Main St", "country": "DE"}), ("put", f"{B}/email", {"email": "a@b.co"}),
])
def test_without_a_provider_the_answer_names_the_setting(alice_client, settings, method, path, body):
    settings.PAYMENTS_API_KEY = ""
    resp = getattr(alice_client, method)(path, body, format="json")
    assert resp.status_code == 409, resp.content
    assert resp.json()["code"] == "payments_not_configured"
    assert resp.json()["details"] == {"setting": "PAYMENTS_API_KEY"} and "PAYMENTS_API_KEY" in resp.json()["message"]
    assert not BillingAccount.objects.exclude(customer_id="").exists()


def test_without_a_provider_what_is_held_still_answers(alice_client, workspace, settings):
    settings.PAYMENTS_API_KEY = ""
    InvoiceFactory(workspace=workspace)
    TaxIdFactory(workspace=workspace)
    summary = alice_client.get(B).json()
    assert summary["provider"] == {"configured": False, "setting": "PAYMENTS_API_KEY"}
    assert summary["plan"] == "free" and summary["status"] == "none" and summary["usageCap"] is None
    assert summary["currency"] == "usd" and summary["spendThisPeriod"] == 0
    assert len(alice_client.get(f"{B}/invoices").json()["items"]) == 1
    assert len(alice_client.get(f"{B}/tax-ids").json()["items"]) == 1
    assert alice_client.post(f"{B}/usage-cap", {"amount": 100}, format="json").status_code == 201
    assert alice_client.get("/v1/orgs/acme/cost/overview").status_code == 200


# Tax ids ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tax_type, value, rule", [
    ("eu_vat", "DE136695977", "checksum"), ("eu_vat", "DE12", "length"), ("eu_vat", "XX123456789", "component"),
    ("gb_vat", "GB12345678", "length"), ("us_ein", "12-345678X", "format"), ("au_abn", "51824753557", "checksum"),
])
def test_a_tax_id_in_the_wrong_format_is_400_naming_the_rule(alice_client, stripe_server, tax_type, value, rule):
    resp = alice_client.post(f"{B}/tax-ids", {"type": tax_type, "value": value}, format="json")
    assert resp.status_code == 400, resp.json()
    body = resp.json()
    assert body["code"] == "validation_error" and body["details"]["rule"] == rule and "value" in body["details"]
    assert f"rule: {rule}" in body["message"] and tax_type in body["message"]
    assert stripe_server.log == [] and not TaxId.objects.exists()


def test_an_unknown_tax_id_type_is_400(alice_client, stripe_server):
    resp = alice_client.post(f"{B}/tax-ids", {"type": "xx_vat", "value": "1"}, format="json")
    assert resp.status_code == 400 and "type" in resp.json()["details"]
    assert stripe_server.log == []


def test_tax_ids_are_sent_listed_and_deleted(alice_client, stripe_server, workspace, charlie, as_user):
    resp = alice_client.post(f"{B}/tax-ids", {"type": "eu_vat", "value": "de 136 695 976"}, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert (body["type"], body["value"], body["country"]) == ("eu_vat", "DE136695976", "DE")
    (_, path, form), = stripe_server.requests("POST", r"/v1/customers/cus_\w+/tax_ids")
    assert form == {"type": "eu_vat", "value": "DE136695976"}
    assert [t["id"] for t in alice_client.get(f"{B}/tax-ids").json()["items"]] == [body["id"]]
    greek = alice_client.post(f"{B}/tax-ids", {"type": "eu_vat", "value": "EL094259216"}, format="json").json()
    assert greek["country"] == "GR"
    assert as_user(charlie).delete(f"/v1/orgs/charlies/billing/tax-ids/{body['id']}").status_code == 404
    resp = alice_client.delete(f"{B}/tax-ids/{body['id']}")
    assert resp.status_code == 200 and resp.json() == {"id": body["id"], "deleted": True}
    assert stripe_server.requests("DELETE", r"/v1/customers/cus_\w+/tax_ids/txi_\w+")
    assert list(TaxId.objects.values_list("value", flat=True)) == ["EL094259216"]
    assert alice_client.delete(f"{B}/tax-ids/{body['id']}").status_code == 404


# Payment methods ---------------------------------------------------------------------------------------------------

def test_a_payment_method_of_another_customer_is_404(alice_client, stripe_server):
    mine = customer(alice_client, stripe_server)
    other = stripe_server.customer_create({"email": "x@example.com"})["id"]
    theirs = stripe_server.attach_card(other, last4="1111")
    mine_pm = stripe_server.attach_card(mine)
    for method, path in (("post", f"{B}/payment-methods/{theirs}/default"), ("delete", f"{B}/payment-methods/{theirs}"),
                         ("post", f"{B}/payment-methods/pm_nonexistent/default"),
                         ("delete", f"{B}/payment-methods/not-a-pm")):
        resp = getattr(alice_client, method)(path)
        assert resp.status_code == 404, (path, resp.content)
        assert resp.json()["code"] == "not_found"
    assert stripe_server.payment_methods[theirs]["customer"] == other  # never detached
    assert [m["id"] for m in alice_client.get(f"{B}/payment-methods").json()["items"]] == [mine_pm]


def test_deleting_the_default_card_detaches_it_and_clears_the_default(alice_client, stripe_server):
    cus = customer(alice_client, stripe_server)
    pm = stripe_server.attach_card(cus)
    alice_client.post(f"{B}/payment-methods/{pm}/default")
    resp = alice_client.delete(f"{B}/payment-methods/{pm}")
    assert resp.status_code == 200 and resp.json() == {"id": pm, "deleted": True}
    assert stripe_server.payment_methods[pm]["customer"] is None
    assert alice_client.get(B).json()["defaultPaymentMethodId"] is None
    assert alice_client.get(f"{B}/payment-methods").json()["items"] == []


def test_a_provider_that_does_not_answer_is_502(alice_client, stripe_server, settings):
    settings.PAYMENTS_API_BASE = "http://127.0.0.1:9"
    resp = alice_client.post(f"{B}/payment-methods/setup-intent")
    assert resp.status_code == 502 and resp.json()["code"] == "payments_provider_error"
    assert not BillingAccount.objects.exclude(customer_id="").exists()


# Subscription ----------------------------------------------------------------------------------------------------

def test_subscription_refusals(alice_client, stripe_server, settings):
    assert alice_client.post(f"{B}/subscription", {"plan": "gold"}, format="json").status_code == 400
    assert alice_client.post(f"{B}/subscription", {"plan": "free"}, format="json").status_code == 400
    resp = alice_client.post(f"{B}/subscription", {"plan": "enterprise"}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "plan_unavailable"
    assert resp.json()["details"] == {"setting": "PAYMENTS_PRICE_ENTERPRISE"}
    resp = alice_client.post(f"{B}/subscription", {"plan": "pro"}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "payment_method_required"
    assert alice_client.delete(f"{B}/subscription").json()["code"] == "no_subscription"
    cus = next(iter(stripe_server.customers))
    pm = stripe_server.attach_card(cus)
    alice_client.post(f"{B}/payment-methods/{pm}/default")
    stripe_server.decline_next()
    resp = alice_client.post(f"{B}/subscription", {"plan": "pro"}, format="json")
    assert resp.status_code == 402 and resp.json()["code"] == "payment_failed"
    assert "declined" in resp.json()["message"]
    assert alice_client.get(B).json()["plan"] == "free"
    assert alice_client.post(f"{B}/subscription", {"plan": "pro"}, format="json").json()["plan"] == "pro"
    # a second subscribe changes the plan of the same subscription
    settings.BILLING_PLAN_PRICE_IDS = {"pro": "price_pro_monthly", "enterprise": "price_ent"}
    body = alice_client.post(f"{B}/subscription", {"plan": "enterprise"}, format="json").json()
    assert body["plan"] == "enterprise" and len(stripe_server.subscriptions) == 1
    (_, _, form), = stripe_server.requests("POST", r"/v1/subscriptions/sub_\w+")
    assert form["items[0][price]"] == "price_ent"


# Address, email, cap input ---------------------------------------------------------------------------------------

def test_address_and_email(alice_client, stripe_server, workspace):
    address = {"line1": "Unter den Linden 1", "line2": "", "city": "Berlin", "postalCode": "10117", "state": "",
               "country": "de"}
    resp = alice_client.put(f"{B}/address", address, format="json")
    assert resp.status_code == 200, resp.json()
    assert resp.json() == {**address, "country": "DE"}
    cus = stripe_server.customers[next(iter(stripe_server.customers))]
    assert cus["address"]["postal_code"] == "10117" and cus["address"]["country"] == "DE"
    assert alice_client.put(f"{B}/email", {"email": "billing@acme.example"}, format="json").json() == {
        "email": "billing@acme.example"}
    assert cus["email"] == "billing@acme.example"
    summary = alice_client.get(B).json()
    assert summary["email"] == "billing@acme.example" and summary["address"]["city"] == "Berlin"
    assert AuditEvent.objects.filter(action__in=["billing.address_set", "billing.email_set"]).count() == 2


@pytest.mark.parametrize("path, body, field", [
    ("address", {"line1": "x", "country": "Germany"}, "country"), ("address", {"country": "DE"}, "line1"),
    ("address", {"line1": "x", "country": "1X"}, "country"), ("address", {"line1": "x", "country": "ZZ"}, "country"),
    ("address", {"line1": "x", "country": "UK"}, "country"), ("address", {"line1": "x", "country": "DE", "zip": "1"},
                                                             "zip"),
    ("email", {"email": "not-an-email"}, "email"), ("email", {}, "email"),
    ("usage-cap", {"amount": -1}, "amount"), ("usage-cap", {"amount": "10"}, "amount"), ("usage-cap", {}, "amount"),
    ("usage-cap", {"amount": 1.5}, "amount"), ("usage-cap", {"amount": 10 ** 13}, "amount"),
])
def test_bad_input_is_400_naming_the_field(alice_client, stripe_server, path, body, field):
    method = alice_client.post if path == "usage-cap" else alice_client.put
    resp = method(f"{B}/{path}", body, format="json")
    assert resp.status_code == 400, resp.json()
    assert field in resp.json()["details"]
    assert not stripe_server.requests(path=r"/v1/customers/.*")
    assert not BillingAccount.objects.filter(usage_cap__isnull=False).exists()
