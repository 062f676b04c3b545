"""The payments provider: Stripe's API through the official `stripe` library, and the only module that speaks it.

A `StripeClient` per call, pointed at PAYMENTS_API_BASE with PAYMENTS_API_KEY (tests point it at a local server
speaking Stripe's wire format). The platform never sees a card: the browser gives it to the provider's card
element with a setup intent's client secret. Answers come back as plain dicts. The library retries a failed POST
with an idempotency key of its own; customers and invoice pieces carry ours too (the workspace's, the invoice
row's), so a task run again, or two racing first uses, make nothing twice.

Errors: not configured → 409 `payments_not_configured` naming the setting; an object the provider does not have
→ 404; a request it refuses → 400 with its message (and the parameter it names); a declined card → 402
`payment_failed`; anything else (unreachable, 5xx, bad key) → 502 `payments_provider_error`.
"""
import hashlib
import hmac
import logging
import time

from django.conf import settings

from config.errors import ApplicationError, NotFound, ValidationFailed

logger = logging.getLogger(__name__)


class PaymentsNotConfigured(ApplicationError):
    status, code = 409, "payments_not_configured"

    def __init__(self):
        super().__init__("The payments provider is not configured on this platform: set PAYMENTS_API_KEY.",
                         details={"setting": "PAYMENTS_API_KEY"})


class PaymentsProviderError(ApplicationError):
    status, code = 502, "payments_provider_error"


class PaymentFailed(ApplicationError):
    status, code = 402, "payment_failed"


def configured() -> bool:
    return bool(settings.PAYMENTS_API_KEY)


def require_configured() -> None:
    if not configured():
        raise PaymentsNotConfigured()


def _client():
    import stripe  # loaded where billing talks to the provider, not by every web worker at start

    require_configured()
    return stripe.StripeClient(settings.PAYMENTS_API_KEY, base_addresses={"api": settings.PAYMENTS_API_BASE},
                               max_network_retries=settings.PAYMENTS_MAX_NETWORK_RETRIES,
                               http_client=stripe.RequestsClient(timeout=settings.PAYMENTS_TIMEOUT_SECONDS))


def _call(what: str, fn, *args, **kwargs) -> dict:
    import stripe

    try:
        return fn(*args, **kwargs).to_dict()
    except stripe.CardError as exc:
        raise PaymentFailed(f"The payment was declined: {exc.user_message or 'no reason given'}",
                            details={"providerCode": exc.code})
    except stripe.InvalidRequestError as exc:
        if exc.http_status == 404:
            raise NotFound(f"No such {what}.")
        field = exc.param or "request"
        raise ValidationFailed(f"The payments provider refused the {what}: {exc.user_message or exc}",
                               details={field: [exc.user_message or str(exc)]})
    except stripe.StripeError as exc:
        logger.warning("payments provider: %s failed (%s: %s)", what, type(exc).__name__, exc)
        raise PaymentsProviderError(f"The payments provider did not complete the {what}; try again.",
                                    details={"providerStatus": exc.http_status})


def _options(key: str | None) -> dict:
    return {"idempotency_key": key} if key else {}


# Customers ------------------------------------------------------------------------------------------------------

def customer_create(*, email: str, name: str, workspace_id: str) -> dict:
    params = {"name": name, "metadata": {"workspace_id": workspace_id}}
    if email:
        params["email"] = email
    return _call("customer", _client().v1.customers.create, params=params,
                 options=_options(f"customer-{workspace_id}"))


def customer_update(*, customer_id: str, params: dict) -> dict:
    return _call("customer", _client().v1.customers.update, customer_id, params=params)


# Payment methods --------------------------------------------------------------------------------------------------

def setup_intent_create(*, customer_id: str) -> dict:
    return _call("setup intent", _client().v1.setup_intents.create,
                 params={"customer": customer_id, "usage": "off_session", "payment_method_types": ["card"]})


def payment_methods_list(*, customer_id: str) -> list[dict]:
    answer = _call("payment method list", _client().v1.customers.payment_methods.list, customer_id,
                   params={"type": "card", "limit": 100})
    return answer.get("data") or []


def payment_method_get(*, payment_method_id: str) -> dict:
    return _call("payment method", _client().v1.payment_methods.retrieve, payment_method_id)


def payment_method_detach(*, payment_method_id: str) -> dict:
    return _call("payment method", _client().v1.payment_methods.detach, payment_method_id)


# Subscriptions ----------------------------------------------------------------------------------------------------

def subscription_create(*, customer_id: str, price_id: str, payment_method_id: str, workspace_id: str) -> dict:
    return _call("subscription", _client().v1.subscriptions.create, params={
        "customer": customer_id, "items": [{"price": price_id}], "default_payment_method": payment_method_id,
        "payment_behavior": "error_if_incomplete", "metadata": {"workspace_id": workspace_id}})


def subscription_change_price(*, subscription_id: str, item_id: str, price_id: str) -> dict:
    return _call("subscription", _client().v1.subscriptions.update, subscription_id, params={
        "items": [{"id": item_id, "price": price_id}], "cancel_at_period_end": False})


def subscription_cancel_at_period_end(*, subscription_id: str) -> dict:
    return _call("subscription", _client().v1.subscriptions.update, subscription_id,
                 params={"cancel_at_period_end": True})


# Tax ids ----------------------------------------------------------------------------------------------------------

def tax_id_create(*, customer_id: str, type: str, value: str) -> dict:
    return _call("tax id", _client().v1.customers.tax_ids.create, customer_id, params={"type": type, "value": value})


def tax_id_delete(*, customer_id: str, tax_id: str) -> dict:
    return _call("tax id", _client().v1.customers.tax_ids.delete, customer_id, tax_id)


# Invoices ---------------------------------------------------------------------------------------------------------

def invoice_create(*, customer_id: str, currency: str, description: str, metadata: dict, key: str) -> dict:
    """A draft invoice that takes only the items made for it (`invoice=`), charged to the default method."""
    return _call("invoice", _client().v1.invoices.create, params={
        "customer": customer_id, "currency": currency, "description": description, "metadata": metadata,
        "collection_method": "charge_automatically", "auto_advance": True,
        "pending_invoice_items_behavior": "exclude"}, options=_options(key))


def invoice_item_create(*, customer_id: str, invoice_id: str, amount: int, currency: str, description: str,
                        period: tuple[int, int], key: str) -> dict:
    return _call("invoice item", _client().v1.invoice_items.create, params={
        "customer": customer_id, "invoice": invoice_id, "amount": amount, "currency": currency,
        "description": description, "period": {"start": period[0], "end": period[1]}}, options=_options(key))


def invoice_finalize(*, invoice_id: str) -> dict:
    return _call("invoice", _client().v1.invoices.finalize_invoice, invoice_id, params={"auto_advance": True})


# Webhooks ---------------------------------------------------------------------------------------------------------

def signature_valid(*, body: bytes, header: str, secret: str, tolerance: int, now: float | None = None) -> bool:
    """Stripe's scheme: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` (several `v1` allowed, as during a
    secret roll), within `tolerance` seconds of now either way, compared in constant time on the raw bytes."""
    if not secret or not header:
        return False
    timestamp, candidates = None, []
    for item in header.split(","):
        name, _, value = item.strip().partition("=")
        if name == "t" and value.isdigit() and len(value) <= 12:
            timestamp = int(value)
        elif name == "v1" and value:
            candidates.append(value.strip())
    if timestamp is None or not candidates:
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    found = False
    for candidate in candidates:  # every candidate compared, so the time does not tell which one matched
        found |= hmac.compare_digest(expected.encode(), candidate.encode("utf-8", "replace"))
    return found
