"""A local server speaking Stripe's wire format (on pytest-httpserver) for the billing tests: form-encoded requests
(`items[0][price]=...`), JSON objects and lists as Stripe answers them, Stripe's error bodies and statuses,
idempotency keys honoured, and every request kept (`requests()`). The official `stripe` library talks to it as it
would to api.stripe.com.

What a browser does with Stripe.js (confirming a setup intent with a card) is `attach_card`; a declined card on
the next charge is `decline_next`. Webhook events are signed as Stripe documents (`sign`)."""
import hashlib
import hmac
import itertools
import json
import re
import time
from urllib.parse import parse_qsl

from werkzeug import Response

API_KEY = "sk_test_fake_billing"
WEBHOOK_SECRET = "whsec_test_billing"


def sign(body: bytes, secret: str = WEBHOOK_SECRET, timestamp: int | None = None, extra_v1: tuple = ()) -> str:
    """The `payment-signature` header Stripe would send: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`."""
    t = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return ",".join([f"t={t}", *[f"v1={v}" for v in extra_v1], f"v1={digest}"])


def event(kind: str, obj: dict, event_id: str | None = None) -> bytes:
    return json.dumps({"id": event_id or f"evt_{kind.replace('.', '_')}_{obj.get('id', 'x')}", "object": "event",
                       "type": kind, "created": int(time.time()), "data": {"object": obj}}).encode()


def _error(status: int, kind: str, message: str, code: str | None = None, param: str | None = None) -> Response:
    body = {"error": {"type": kind, "message": message, **({"code": code} if code else {}),
                      **({"param": param} if param else {})}}
    return Response(json.dumps(body), status=status, content_type="application/json")


class FakeStripe:
    def __init__(self, httpserver):
        self.server = httpserver
        self.ids = itertools.count(1)
        self.customers: dict = {}
        self.payment_methods: dict = {}
        self.setup_intents: dict = {}
        self.subscriptions: dict = {}
        self.tax_ids: dict = {}
        self.invoices: dict = {}
        self.items: dict = {}
        self.replies: dict = {}  # idempotency key → (status, body)
        self.declines = 0
        self.log: list = []
        httpserver.expect_request(re.compile(r"^/v1/.*")).respond_with_handler(self.handle)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def _id(self, prefix: str) -> str:
        return f"{prefix}_fake{next(self.ids):04d}"

    def requests(self, method: str | None = None, path: str | None = None) -> list:
        """(method, path, form) of the requests received, optionally only those matching."""
        return [r for r in self.log if (method is None or r[0] == method) and (path is None or re.fullmatch(path, r[1]))]

    # -- what the browser and the test do --------------------------------------------------------------------------
    def attach_card(self, customer_id: str, *, brand: str = "visa", last4: str = "4242") -> str:
        """Stripe.js confirmed a setup intent of the customer with a card: a payment method attached to it."""
        pm = {"id": self._id("pm"), "object": "payment_method", "type": "card", "customer": customer_id,
              "card": {"brand": brand, "last4": last4, "exp_month": 12, "exp_year": 2030}}
        self.payment_methods[pm["id"]] = pm
        for intent in self.setup_intents.values():
            if intent["customer"] == customer_id and intent["status"] == "requires_payment_method":
                intent.update(status="succeeded", payment_method=pm["id"])
        return pm["id"]

    def decline_next(self) -> None:
        self.declines += 1

    # -- the API -------------------------------------------------------------------------------------------------------
    def handle(self, request):
        form = dict(parse_qsl(request.get_data(as_text=True), keep_blank_values=True))
        form.update(dict(parse_qsl(request.query_string.decode(), keep_blank_values=True)))
        self.log.append((request.method, request.path, form))
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return _error(401, "invalid_request_error", "Invalid API Key provided.")
        key = request.headers.get("Idempotency-Key")
        if key and key in self.replies and request.method == "POST":
            status, body = self.replies[key]
            return Response(body, status=status, content_type="application/json")
        answer = self.route(request.method, request.path, form)
        if isinstance(answer, Response):
            return answer
        body = json.dumps(answer)
        if key and request.method == "POST":
            self.replies[key] = (200, body)
        return Response(body, status=200, content_type="application/json")

    ROUTES = (
        ("POST", r"/v1/customers", "customer_create"),
        ("POST", r"/v1/customers/(cus_\w+)", "customer_update"),
        ("GET", r"/v1/customers/(cus_\w+)/payment_methods", "customer_payment_methods"),
        ("POST", r"/v1/customers/(cus_\w+)/tax_ids", "tax_id_create"),
        ("DELETE", r"/v1/customers/(cus_\w+)/tax_ids/(\w+)", "tax_id_delete"),
        ("POST", r"/v1/setup_intents", "setup_intent_create"),
        ("GET", r"/v1/payment_methods/(\w+)", "payment_method_get"),
        ("POST", r"/v1/payment_methods/(\w+)/detach", "payment_method_detach"),
        ("POST", r"/v1/subscriptions", "subscription_create"),
        ("POST", r"/v1/subscriptions/(sub_\w+)", "subscription_update"),
        ("POST", r"/v1/invoices", "invoice_create"),
        ("POST", r"/v1/invoiceitems", "invoice_item_create"),
        ("POST", r"/v1/invoices/(in_\w+)/finalize", "invoice_finalize"),
    )

    def route(self, method, path, form):
        for verb, pattern, name in self.ROUTES:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                return getattr(self, name)(form, *match.groups())
        return _error(404, "invalid_request_error", f"Unrecognized request URL ({method}: {path}).")

    def _missing(self, what: str, ident: str):
        return _error(404, "invalid_request_error", f"No such {what}: '{ident}'", code="resource_missing", param="id")

    def customer_create(self, form):
        customer = {"id": self._id("cus"), "object": "customer", "email": form.get("email"), "name": form.get("name"),
                    "metadata": {"workspace_id": form.get("metadata[workspace_id]")}, "address": None,
                    "invoice_settings": {"default_payment_method": None}}
        self.customers[customer["id"]] = customer
        return customer

    def customer_update(self, form, customer_id):
        customer = self.customers.get(customer_id)
        if customer is None:
            return self._missing("customer", customer_id)
        if "email" in form:
            customer["email"] = form["email"]
        if "invoice_settings[default_payment_method]" in form:
            customer["invoice_settings"]["default_payment_method"] = form["invoice_settings[default_payment_method]"]
        address = {k[len("address["):-1]: v for k, v in form.items() if k.startswith("address[")}
        if address:
            customer["address"] = address
        return customer

    def customer_payment_methods(self, form, customer_id):
        if customer_id not in self.customers:
            return self._missing("customer", customer_id)
        data = [pm for pm in self.payment_methods.values() if pm["customer"] == customer_id]
        return {"object": "list", "data": data, "has_more": False, "url": f"/v1/customers/{customer_id}/payment_methods"}

    def tax_id_create(self, form, customer_id):
        if customer_id not in self.customers:
            return self._missing("customer", customer_id)
        country = form["value"][:2] if form["type"] == "eu_vat" else form["type"][:2].upper()
        tax_id = {"id": self._id("txi"), "object": "tax_id", "type": form["type"], "value": form["value"],
                  "country": country, "customer": customer_id}
        self.tax_ids[tax_id["id"]] = tax_id
        return tax_id

    def tax_id_delete(self, form, customer_id, tax_id):
        if self.tax_ids.pop(tax_id, None) is None:
            return self._missing("tax_id", tax_id)
        return {"id": tax_id, "object": "tax_id", "deleted": True}

    def setup_intent_create(self, form):
        intent_id = self._id("seti")
        intent = {"id": intent_id, "object": "setup_intent", "customer": form.get("customer"),
                  "client_secret": f"{intent_id}_secret_fake", "status": "requires_payment_method",
                  "usage": form.get("usage"), "payment_method_types": [form.get("payment_method_types[0]")]}
        self.setup_intents[intent_id] = intent
        return intent

    def payment_method_get(self, form, pm_id):
        pm = self.payment_methods.get(pm_id)
        return pm if pm is not None else self._missing("PaymentMethod", pm_id)

    def payment_method_detach(self, form, pm_id):
        pm = self.payment_methods.get(pm_id)
        if pm is None:
            return self._missing("PaymentMethod", pm_id)
        pm["customer"] = None
        return pm

    def _period(self):
        now = int(time.time())
        return now, now + 30 * 86400

    def subscription_create(self, form):
        if self.declines:
            self.declines -= 1
            return _error(402, "card_error", "Your card was declined.", code="card_declined")
        start, end = self._period()
        sub = {"id": self._id("sub"), "object": "subscription", "customer": form["customer"], "status": "active",
               "cancel_at_period_end": False, "default_payment_method": form.get("default_payment_method"),
               "metadata": {"workspace_id": form.get("metadata[workspace_id]")},
               "items": {"object": "list", "data": [{"id": self._id("si"), "object": "subscription_item",
                                                     "price": {"id": form["items[0][price]"], "object": "price"},
                                                     "current_period_start": start, "current_period_end": end}]}}
        self.subscriptions[sub["id"]] = sub
        return sub

    def subscription_update(self, form, sub_id):
        sub = self.subscriptions.get(sub_id)
        if sub is None:
            return self._missing("subscription", sub_id)
        if "cancel_at_period_end" in form:
            sub["cancel_at_period_end"] = form["cancel_at_period_end"] == "true"
        if "items[0][price]" in form:
            sub["items"]["data"][0]["price"] = {"id": form["items[0][price]"], "object": "price"}
        return sub

    def invoice_create(self, form):
        invoice = {"id": self._id("in"), "object": "invoice", "customer": form["customer"], "status": "draft",
                   "currency": form.get("currency"), "description": form.get("description"), "number": None,
                   "total": 0, "amount_due": 0, "invoice_pdf": None, "hosted_invoice_url": None,
                   "collection_method": form.get("collection_method"),
                   "metadata": {k[9:-1]: v for k, v in form.items() if k.startswith("metadata[")},
                   "lines": {"object": "list", "data": []}}
        self.invoices[invoice["id"]] = invoice
        return invoice

    def invoice_item_create(self, form):
        invoice = self.invoices.get(form.get("invoice"))
        if invoice is None:
            return self._missing("invoice", form.get("invoice"))
        if invoice["status"] != "draft":
            return _error(400, "invalid_request_error", "The invoice is not a draft.", param="invoice")
        item = {"id": self._id("ii"), "object": "invoiceitem", "invoice": invoice["id"], "customer": form["customer"],
                "amount": int(form["amount"]), "currency": form["currency"], "description": form["description"]}
        self.items[item["id"]] = item
        invoice["lines"]["data"].append({"id": self._id("il"), "object": "line_item", "amount": item["amount"],
                                         "description": item["description"], "quantity": 1})
        invoice["total"] += item["amount"]
        invoice["amount_due"] = invoice["total"]
        return item

    def invoice_finalize(self, form, invoice_id):
        invoice = self.invoices.get(invoice_id)
        if invoice is None:
            return self._missing("invoice", invoice_id)
        invoice.update(status="open", number=f"FAKE-{len([i for i in self.invoices.values() if i['number']]) + 1:04d}",
                       invoice_pdf=f"https://pay.example.com/invoice/{invoice_id}/pdf",
                       hosted_invoice_url=f"https://pay.example.com/invoice/{invoice_id}")
        return invoice
