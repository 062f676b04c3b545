"""The workspace's Billing page: plan and subscription, payment methods ("add a card" shows where the provider's
card element mounts), invoices, tax ids, address, email and the usage cap. Owners, admins and billing members
(`billing`) only, as the API; others get its 403. Same services as the API.

The card element is the provider's JavaScript, which this site's Content-Security-Policy does not allow: the page
works without it (it shows the setup intent the element would confirm and says so); a deployment that takes cards
adds the provider's script origin to CONTENT_SECURITY_POLICY (docs/billing.md)."""
from decimal import ROUND_HALF_UP, Decimal

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from config.errors import ApplicationError
from platform_app.pages.base import client_ip, form_error, require, workspace_context
from platform_app.services.billing import billing as services
from platform_app.services.billing import caps, meters, provider
from platform_app.services.billing.tax_ids import TYPES


def _major(amount: int | None, currency: str) -> Decimal | None:
    if amount is None:
        return None
    return Decimal(amount) if currency.lower() in meters.ZERO_DECIMAL else Decimal(amount) / 100


class UsageCapForm(forms.Form):
    amount = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=2,
                                label="Monthly usage cap", help_text="In the billing currency; empty removes the cap.")

    def minor_units(self, currency: str) -> int | None:
        value = self.cleaned_data["amount"]
        if value is None:
            return None
        factor = 1 if currency.lower() in meters.ZERO_DECIMAL else 100
        return int((value * factor).quantize(Decimal(1), rounding=ROUND_HALF_UP))


class PlanForm(forms.Form):
    plan = forms.ChoiceField(choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["plan"].choices = [(p, p) for p in settings.PLANS  # the paid plans with a provider price
                                       if p != "free" and settings.BILLING_PLAN_PRICE_IDS.get(p)]


class TaxIdForm(forms.Form):
    type = forms.ChoiceField(choices=[(key, f"{key}: {t.name}") for key, t in TYPES.items()], label="Tax id type")
    value = forms.CharField(max_length=64, label="Tax id")


class AddressForm(forms.Form):
    line1 = forms.CharField(max_length=200, label="Address line 1")
    line2 = forms.CharField(max_length=200, required=False, label="Address line 2")
    city = forms.CharField(max_length=200, required=False)
    postal_code = forms.CharField(max_length=200, required=False, label="Postal code")
    state = forms.CharField(max_length=200, required=False, label="State or region")
    country = forms.CharField(max_length=2, min_length=2, help_text="Two letters (ISO 3166-1), e.g. DE.")


class EmailForm(forms.Form):
    email = forms.EmailField(max_length=254, label="Billing email")


FORMS = {"usage-cap": UsageCapForm, "subscribe": PlanForm, "tax-id": TaxIdForm, "address": AddressForm,
         "email": EmailForm}


def _act(request, workspace, action: str, form, item: str):
    """Run one POSTed action; a success message (or None when it left its own), or raise the service's
    ApplicationError."""
    who = {"actor": request.user, "ip": client_ip(request)}
    if action == "usage-cap":
        state = caps.usage_cap_set(workspace=workspace, amount=form.minor_units(settings.BILLING_CURRENCY), **who)
        if state["reached"]:  # accepted, and deploys stop now: a warning, not a success
            messages.warning(request, state["message"])
            return None
        return state["message"]
    if action == "subscribe":
        services.subscription_start(workspace=workspace, plan=form.cleaned_data["plan"], **who)
        return f"Subscribed to {form.cleaned_data['plan']}."
    if action == "cancel":
        services.subscription_cancel(workspace=workspace, **who)
        return "The subscription ends with the paid period."
    if action == "default":
        services.payment_method_default(workspace=workspace, payment_method_id=item, **who)
        return "Default card changed."
    if action == "remove-card":
        services.payment_method_delete(workspace=workspace, payment_method_id=item, **who)
        return "Card removed."
    if action == "tax-id":
        tax_id = services.tax_id_add(workspace=workspace, type=form.cleaned_data["type"],
                                     value=form.cleaned_data["value"], **who)
        return f"Tax id {tax_id.value} added."
    if action == "remove-tax-id":
        services.tax_id_delete(workspace=workspace, tax_id_id=item, **who)
        return "Tax id removed."
    if action == "address":
        services.address_set(workspace=workspace, address=form.cleaned_data, **who)
        return "Billing address saved."
    if action == "email":
        services.email_set(workspace=workspace, email=form.cleaned_data["email"], **who)
        return "Billing email saved."
    raise ApplicationError("Unknown action.", status=404, code="not_found")


@login_required
def billing_page(request, org_id):
    """GET shows billing; POST `action` (+ `item`) changes it. `add-card` answers 201 with the page showing the
    setup intent where the provider's card element would mount."""
    context = workspace_context(request, org_id)
    require(context, "billing")
    workspace = context["workspace"]
    action = request.POST.get("action", "") if request.method == "POST" else ""
    summary = services.billing_summary(workspace=workspace)
    currency = summary["currency"]
    bound = {name: cls(request.POST if action == name else None) for name, cls in FORMS.items()}
    if not bound["usage-cap"].is_bound:
        bound["usage-cap"] = UsageCapForm(initial={"amount": _major(summary["usage_cap"], currency)})
    if not bound["email"].is_bound and summary["email"]:
        bound["email"] = EmailForm(initial={"email": summary["email"]})
    if not bound["address"].is_bound and summary["address"]:
        bound["address"] = AddressForm(initial=summary["address"])
    intent, status = None, 200
    if action == "add-card":
        try:
            intent = services.setup_intent_create(workspace=workspace, actor=request.user, ip=client_ip(request))
            status = 201
        except ApplicationError as exc:
            messages.error(request, exc.message)
    elif action:
        form = bound.get(action)
        if form is None or form.is_valid():
            try:
                done = _act(request, workspace, action, form, request.POST.get("item", "")[:100])
                if done:
                    messages.success(request, done)
            except ApplicationError as exc:
                if form is None:
                    messages.error(request, exc.message)
                    return redirect("workspace-billing", org_id=workspace.slug)
                form_error(form, exc)
            else:
                return redirect("workspace-billing", org_id=workspace.slug)
        status = 400
    methods, methods_error = [], ""
    if provider.configured():
        try:
            methods = services.payment_methods_list(workspace=workspace)
        except ApplicationError as exc:
            methods_error = exc.message
    context.update(
        tab="billing", summary=summary, forms={k.replace("-", "_"): v for k, v in bound.items()}, intent=intent, methods=methods, methods_error=methods_error,
        configured=provider.configured(), publishable_key=settings.PAYMENTS_PUBLISHABLE_KEY,
        spend=meters.money(summary["spend_this_period"], currency),
        cap=meters.money(summary["usage_cap"], currency) if summary["usage_cap"] is not None else None,
        invoices=[{"invoice": i, "total": meters.money(i.total, i.currency)}
                  for i in services.invoices_list(workspace=workspace)[:24]],
        tax_ids=services.tax_ids_list(workspace=workspace))
    return render(request, "platform_app/billing/billing.html", context, status=status)
