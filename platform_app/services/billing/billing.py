"""A workspace's billing with the payments provider: its customer, payment methods (the provider's, mirrored:
never stored here), subscription to a plan, tax ids, billing address and email, invoices held, and the summary
the API and the Billing page show. Every change is audited."""
import re
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from platform_app.models import BillingAccount, Invoice, TaxId, Workspace
from platform_app.services.org.growth_events import SUBSCRIBED, growth_event_record
from platform_app.services.billing import meters, provider
from platform_app.services.billing.accounts import account_for
from platform_app.services.billing.caps import usage_cap_state
from platform_app.services.billing.tax_ids import tax_id_check
from platform_app.services.teams.audit import audit_record

ACTIVE = ("active", "trialing")
ENDED = ("canceled", "incomplete_expired")  # final at the provider: a subscription in them never comes back
ADDRESS_FIELDS = ("line1", "line2", "city", "postal_code", "state", "country")
COUNTRY = re.compile(r"^[A-Z]{2}$")


def _when(unix) -> datetime | None:
    return datetime.fromtimestamp(int(unix), tz=UTC) if isinstance(unix, int) and unix > 0 else None


# Summary ----------------------------------------------------------------------------------------------------------

def dunning_of(*, workspace, now: datetime | None = None) -> dict | None:
    """The oldest unpaid invoice whose payment failed: when, and when the workspace is (or was) past due."""
    now = now or timezone.now()
    failed = (Invoice.objects.filter(workspace=workspace, payment_failed_at__isnull=False, paid_at__isnull=True)
              .exclude(status__in=("paid", "void")).order_by("payment_failed_at").first())
    if failed is None:
        return None
    past_due_at = failed.payment_failed_at + timedelta(days=settings.BILLING_PAST_DUE_GRACE_DAYS)
    return {"invoice_id": failed.pk, "failed_at": failed.payment_failed_at, "past_due_at": past_due_at,
            "past_due": now >= past_due_at}


def billing_status(*, account: BillingAccount | None, workspace, now: datetime | None = None) -> str:
    """`past_due` once a failed invoice is unpaid past the grace period; otherwise the subscription's status as the
    provider reported it (`active`, `trialing`, `canceled`...), or `none` without a subscription."""
    dunning = dunning_of(workspace=workspace, now=now)
    if dunning and dunning["past_due"]:
        return "past_due"
    return (account.subscription_status if account is not None else "") or "none"


def billing_summary(*, workspace, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    account = BillingAccount.objects.filter(workspace=workspace).first()
    start, end = meters.period_bounds(now)
    cap = usage_cap_state(workspace=workspace, account=account, now=now)
    subscription = None
    if account is not None and account.subscription_id:
        subscription = {"id": account.subscription_id, "plan": account.subscription_plan,
                        "status": account.subscription_status, "cancel_at_period_end": account.cancel_at_period_end,
                        "current_period_end": account.subscription_period_end}
    return {
        "plan": workspace.plan, "status": billing_status(account=account, workspace=workspace, now=now),
        "current_period": {"start": start, "end": end}, "spend_this_period": cap["spend_this_period"],
        "usage_cap": cap["amount"], "usage_cap_reached": cap["reached"], "usage_cap_message": cap["message"],
        "currency": settings.BILLING_CURRENCY, "email": account.email if account else "",
        "address": _address_out(account.address if account else {}),
        "default_payment_method_id": (account.default_payment_method_id or None) if account else None,
        "subscription": subscription, "dunning": dunning_of(workspace=workspace, now=now),
        "provider": {"configured": provider.configured(), "setting": "PAYMENTS_API_KEY"},
        "plans": [{"id": key, "instances": spec["instances"],
                   "purchasable": key == "free" or bool(settings.BILLING_PLAN_PRICE_IDS.get(key))}
                  for key, spec in settings.PLANS.items()],
    }


def _address_out(address: dict) -> dict | None:
    return {f: address.get(f, "") for f in ADDRESS_FIELDS} if address else None


# Customer ---------------------------------------------------------------------------------------------------------

def _owner_email(workspace) -> str:
    from platform_app.choices import Role

    membership = workspace.memberships.filter(role=Role.OWNER).select_related("user").order_by("created_at").first()
    return membership.user.email if membership else ""


def customer_ensure(*, workspace) -> BillingAccount:
    """The workspace's account with a customer at the provider, made on first use and kept even when what the
    caller does next fails (call it before the caller's own transaction). The provider's idempotency key makes
    two racing first uses one customer."""
    provider.require_configured()
    with transaction.atomic():
        account = account_for(workspace=workspace, lock=True)
        if not account.customer_id:
            customer = provider.customer_create(email=account.email or _owner_email(workspace), name=workspace.name,
                                                workspace_id=workspace.pk)
            account.customer_id = customer["id"]
            account.save(update_fields=["customer_id", "updated_at"])
    return account


# Payment methods --------------------------------------------------------------------------------------------------

def _method(pm: dict, default_id: str) -> dict:
    card = pm.get("card") or {}
    return {"id": pm["id"], "brand": card.get("brand", ""), "last4": card.get("last4", ""),
            "exp_month": card.get("exp_month"), "exp_year": card.get("exp_year"), "default": pm["id"] == default_id}


def setup_intent_create(*, workspace, actor=None, ip: str = "") -> dict:
    """What the browser's card element needs to hand a card to the provider: `{"id", "client_secret"}`."""
    account = customer_ensure(workspace=workspace)
    intent = provider.setup_intent_create(customer_id=account.customer_id)
    audit_record(workspace=workspace, actor=actor, action="billing.setup_intent_created", target=account,
                 data={"setupIntent": intent["id"]}, ip=ip)
    return {"id": intent["id"], "client_secret": intent.get("client_secret", "")}


def payment_methods_list(*, workspace) -> list[dict]:
    """The customer's cards, as the provider holds them (none before a customer exists)."""
    provider.require_configured()
    account = BillingAccount.objects.filter(workspace=workspace).first()
    if account is None or not account.customer_id:
        return []
    return [_method(pm, account.default_payment_method_id)
            for pm in provider.payment_methods_list(customer_id=account.customer_id)]


def _own_method(account: BillingAccount, payment_method_id: str) -> dict:
    """The provider's payment method, when it is this customer's; 404 for any other (another customer's, or none)."""
    if not account.customer_id or not payment_method_id.startswith("pm_") or len(payment_method_id) > 100:
        raise NotFound("No such payment method.")
    pm = provider.payment_method_get(payment_method_id=payment_method_id)
    if pm.get("customer") != account.customer_id:
        raise NotFound("No such payment method.")
    return pm


@transaction.atomic
def payment_method_default(*, workspace, payment_method_id: str, actor=None, ip: str = "") -> dict:
    """Make one of the customer's cards the one invoices and the subscription are charged to."""
    provider.require_configured()
    account = account_for(workspace=workspace, lock=True)
    pm = _own_method(account, payment_method_id)
    provider.customer_update(customer_id=account.customer_id,
                             params={"invoice_settings": {"default_payment_method": pm["id"]}})
    account.default_payment_method_id = pm["id"]
    account.save(update_fields=["default_payment_method_id", "updated_at"])
    audit_record(workspace=workspace, actor=actor, action="billing.payment_method_default", target=account,
                 data={"paymentMethod": pm["id"]}, ip=ip)
    return _method(pm, pm["id"])


@transaction.atomic
def payment_method_delete(*, workspace, payment_method_id: str, actor=None, ip: str = "") -> dict:
    """Detach a card from the customer at the provider."""
    provider.require_configured()
    account = account_for(workspace=workspace, lock=True)
    pm = _own_method(account, payment_method_id)
    provider.payment_method_detach(payment_method_id=pm["id"])
    if account.default_payment_method_id == pm["id"]:
        account.default_payment_method_id = ""
        account.save(update_fields=["default_payment_method_id", "updated_at"])
    audit_record(workspace=workspace, actor=actor, action="billing.payment_method_deleted", target=account,
                 data={"paymentMethod": pm["id"]}, ip=ip)
    return {**_method(pm, ""), "deleted": True}


# Subscription -----------------------------------------------------------------------------------------------------

def plan_for_price(price_id: str) -> str | None:
    return next((plan for plan, price in settings.BILLING_PLAN_PRICE_IDS.items() if price and price == price_id), None)


def subscription_apply(*, account: BillingAccount, subscription: dict, at: datetime | None = None) -> None:
    """Mirror the provider's subscription on the account and the workspace's plan (a paid plan while it is active
    or trialing, `free` once it ended). `at`: when the provider said so (an event's `created`; an API answer is
    now), to the second as events carry it. `account` is locked by the caller."""
    items = ((subscription.get("items") or {}).get("data") or [])
    item = items[0] if items else {}
    price_id = ((item.get("price") or {}).get("id")) or ""
    status = subscription.get("status") or ""
    period_end = _when(subscription.get("current_period_end") or item.get("current_period_end"))
    account.subscription_id = subscription.get("id") or account.subscription_id
    account.subscription_item_id = item.get("id") or account.subscription_item_id
    account.subscription_status = status
    account.subscription_plan = plan_for_price(price_id) or account.subscription_plan
    account.cancel_at_period_end = bool(subscription.get("cancel_at_period_end"))
    account.subscription_period_end = period_end or account.subscription_period_end
    account.subscription_event_at = (at or timezone.now()).replace(microsecond=0)
    account.save()
    plan = account.subscription_plan if status in ACTIVE else ("free" if status in ("canceled", "incomplete_expired",
                                                                                     "unpaid") else None)
    if plan and plan in settings.PLANS:
        Workspace.objects.filter(pk=account.workspace_id).exclude(plan=plan).update(plan=plan)


def subscription_start(*, workspace, plan: str, actor=None, ip: str = "") -> dict:
    """Subscribe to a paid plan (or move the subscription to it), charged to the default payment method; the
    workspace's plan follows once the provider says the subscription is active."""
    if plan not in settings.PLANS:
        raise ValidationFailed(f"plan must be one of {', '.join(settings.PLANS)}.",
                               details={"plan": [f"One of {', '.join(settings.PLANS)}."]})
    if plan == "free":
        raise ValidationFailed("The free plan needs no subscription: cancel the subscription instead (DELETE).",
                               details={"plan": ["free has no subscription."]})
    price_id = settings.BILLING_PLAN_PRICE_IDS.get(plan) or ""
    if not price_id:
        setting = settings.BILLING_PLAN_PRICE_SETTINGS.get(plan, "BILLING_PLAN_PRICE_IDS")
        provider.require_configured()
        raise Conflict(f"The {plan} plan has no price at the payments provider: set {setting}.",
                       code="plan_unavailable", details={"setting": setting})
    customer_ensure(workspace=workspace)
    with transaction.atomic():
        account = account_for(workspace=workspace, lock=True)
        if not account.default_payment_method_id:
            raise Conflict("Add a card and make it the default before subscribing.", code="payment_method_required")
        if account.subscription_id and account.subscription_status in ACTIVE and account.subscription_item_id:
            subscription = provider.subscription_change_price(subscription_id=account.subscription_id,
                                                              item_id=account.subscription_item_id, price_id=price_id)
        else:
            subscription = provider.subscription_create(
                customer_id=account.customer_id, price_id=price_id,
                payment_method_id=account.default_payment_method_id, workspace_id=workspace.pk)
        account.subscription_plan = plan
        subscription_apply(account=account, subscription=subscription)
        audit_record(workspace=workspace, actor=actor, action="billing.subscribed", target=account,
                     data={"plan": plan, "subscription": account.subscription_id,
                           "status": account.subscription_status}, ip=ip)
        growth_event_record(event=SUBSCRIBED, user=actor, workspace=workspace, properties={"plan": plan})
    workspace.refresh_from_db(fields=["plan"])
    return billing_summary(workspace=workspace)


@transaction.atomic
def subscription_cancel(*, workspace, actor=None, ip: str = "") -> dict:
    """Cancel at the end of the paid period (the plan stays until then)."""
    provider.require_configured()
    account = account_for(workspace=workspace, lock=True)
    if not account.subscription_id or account.subscription_status in ENDED:
        raise Conflict("There is no subscription to cancel.", code="no_subscription")
    subscription = provider.subscription_cancel_at_period_end(subscription_id=account.subscription_id)
    subscription_apply(account=account, subscription=subscription)
    audit_record(workspace=workspace, actor=actor, action="billing.subscription_canceled", target=account,
                 data={"subscription": account.subscription_id}, ip=ip)
    return {"cancel_at_period_end": account.cancel_at_period_end, "current_period_end": account.subscription_period_end}


# Tax ids, address, email ------------------------------------------------------------------------------------------

def tax_ids_list(*, workspace):
    return TaxId.objects.filter(workspace=workspace)


def tax_id_add(*, workspace, type: str, value: str, actor=None, ip: str = "") -> TaxId:
    provider.require_configured()
    clean, country = tax_id_check(type=type, value=value)  # 400 before anything is sent
    account = customer_ensure(workspace=workspace)
    made = provider.tax_id_create(customer_id=account.customer_id, type=type, value=clean)
    with transaction.atomic():
        tax_id = TaxId.objects.create(workspace=workspace, provider_id=made["id"], type=type,
                                      value=made.get("value") or clean, country=country.upper())
        audit_record(workspace=workspace, actor=actor, action="billing.tax_id_added", target=tax_id,
                     data={"type": type, "country": tax_id.country}, ip=ip)
    return tax_id


@transaction.atomic
def tax_id_delete(*, workspace, tax_id_id: str, actor=None, ip: str = "") -> TaxId:
    provider.require_configured()
    tax_id = TaxId.objects.select_for_update().filter(workspace=workspace, pk=tax_id_id).first()
    if tax_id is None:
        raise NotFound("No such tax id.")
    account = account_for(workspace=workspace)
    try:
        provider.tax_id_delete(customer_id=account.customer_id, tax_id=tax_id.provider_id)
    except NotFound:
        pass  # gone at the provider already: forget it here too
    audit_record(workspace=workspace, actor=actor, action="billing.tax_id_deleted", target=tax_id,
                 data={"type": tax_id.type}, ip=ip)
    pk = tax_id.pk
    tax_id.delete()
    tax_id.pk = pk
    return tax_id


def _iso_country(code: str) -> bool:
    """An assigned ISO 3166-1 alpha-2 code (pycountry's list: `ZZ` or `UK` pass a two-letter pattern, not this)."""
    import pycountry  # its tables load on first use, not in every web process

    return bool(COUNTRY.match(code)) and pycountry.countries.get(alpha_2=code) is not None


def _address_in(address: dict) -> dict:
    clean, errors = {}, {}
    for name in ADDRESS_FIELDS:
        value = address.get(name) or ""
        if not isinstance(value, str) or len(value) > 200:
            errors[name] = ["A string of at most 200 characters."]
        else:
            clean[name] = value.strip()
    if not clean.get("line1"):
        errors["line1"] = ["Required."]
    if not _iso_country(clean.get("country", "").upper()):
        errors["country"] = ["An ISO 3166-1 alpha-2 code, e.g. DE."]
    if errors:
        raise ValidationFailed("The address is invalid.", details=errors)
    clean["country"] = clean["country"].upper()
    return clean


def address_set(*, workspace, address: dict, actor=None, ip: str = "") -> dict:
    """The billing address, on the provider's customer (invoices and tax) and here."""
    provider.require_configured()
    clean = _address_in(address)
    account = customer_ensure(workspace=workspace)
    provider.customer_update(customer_id=account.customer_id, params={"address": clean})
    with transaction.atomic():
        BillingAccount.objects.filter(pk=account.pk).update(address=clean, updated_at=timezone.now())
        audit_record(workspace=workspace, actor=actor, action="billing.address_set", target=account,
                     data={"country": clean["country"]}, ip=ip)
    return _address_out(clean)


def email_set(*, workspace, email: str, actor=None, ip: str = "") -> str:
    """Where invoices and billing notices go (besides the owners and billing members)."""
    provider.require_configured()
    email = (email or "").strip()
    try:
        validate_email(email)
    except DjangoValidationError:
        raise ValidationFailed("email must be an email address.", details={"email": ["Not an email address."]})
    account = customer_ensure(workspace=workspace)
    provider.customer_update(customer_id=account.customer_id, params={"email": email})
    with transaction.atomic():
        BillingAccount.objects.filter(pk=account.pk).update(email=email, updated_at=timezone.now())
        audit_record(workspace=workspace, actor=actor, action="billing.email_set", target=account, ip=ip)
    return email


# Invoices held ----------------------------------------------------------------------------------------------------

def invoices_list(*, workspace):
    return Invoice.objects.filter(workspace=workspace)


def invoice_get(*, workspace, invoice_id: str) -> Invoice:
    invoice = Invoice.objects.filter(workspace=workspace, pk=invoice_id).first()
    if invoice is None:
        raise NotFound("No such invoice.")
    return invoice
