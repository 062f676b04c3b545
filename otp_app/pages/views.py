"""The code console under /dashboard/otp/: keys, balance and usage, the verification log, test sends and the
sandbox outbox, routing. Same services as the API; what a role may do is decided by its scopes, as on the
platform dashboard (`can.admin` manages keys, `can.deploy` sends and verifies test codes)."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from otp_app import messages as otp_messages
from otp_app.models import CHANNELS, ApiKey, OtpRecord
from otp_app.pages.charts import stacked_days
from otp_app.services import console
from otp_app.services.balance import balance_report
from otp_app.services.keys import otp_key_create, otp_key_revoke
from platform_app.pages.base import form_error, require, workspace_context, workspace_form_create
from platform_app.services.teams.workspaces import workspaces_of

KEYS_SCOPE = "admin"  # creating and revoking keys
SEND_SCOPE = "deploy"  # test sends and sandbox verification: developers and above
LOG_PAGE_SIZE = 25


class WorkspaceForm(forms.Form):
    name = forms.CharField(max_length=100, label="Workspace name")
    slug = forms.SlugField(max_length=40, required=False, help_text="Used in addresses; empty = from the name.")


class KeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False)
    mode = forms.ChoiceField(choices=ApiKey.Mode.choices, initial="test")


class LogFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *OtpRecord.Status.choices], required=False)
    channel = forms.ChoiceField(choices=[("", "Any channel"), *[(c, c) for c in CHANNELS]], required=False)
    day_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    day_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    page = forms.IntegerField(required=False, min_value=1, max_value=1_000_000, widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        if data.get("day_from") and data.get("day_to") and data["day_from"] > data["day_to"]:
            raise forms.ValidationError("“From” must not be after “To”.")
        return data


class TestSendForm(forms.Form):
    recipient = forms.CharField(max_length=254, help_text="E.164 number (+14155550123) or an email address")
    channel = forms.ChoiceField(choices=[("", "Routing decides"), *[(c, c) for c in CHANNELS]], required=False)
    locale = forms.ChoiceField(choices=[(code, code) for code in otp_messages.LOCALES], initial="en")


class VerifyForm(forms.Form):
    record = forms.CharField(max_length=40, widget=forms.HiddenInput)
    code = forms.CharField(max_length=6, min_length=6, label="Code",
                           widget=forms.TextInput(attrs={"inputmode": "numeric", "autocomplete": "one-time-code",
                                                         "pattern": "[0-9]{6}"}))


def _context(request, org_id, tab):
    context = workspace_context(request, org_id)
    context["tab"] = tab
    return context


@login_required
def console_home(request):
    """The user's workspaces; a user in none creates one here (through the platform's service) and goes on to
    its console."""
    form = WorkspaceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        workspace = workspace_form_create(request, form)
        if workspace is not None:
            messages.success(request, f"Workspace “{workspace.name}” created. Create a test key to send codes.")
            return redirect("otp-console-workspace", org_id=workspace.slug)
    return render(request, "otp_app/console_home.html", {"memberships": workspaces_of(request.user), "form": form},
                  status=400 if form.errors else 200)


@login_required
def console_workspace(request, org_id):
    """Keys (create, revoke), balance and usage per channel per day."""
    context = _context(request, org_id, "overview")
    workspace = context["workspace"]
    form = KeyForm(request.POST or None)
    created, status = None, 200
    if request.method == "POST":
        require(context, KEYS_SCOPE)
        if form.is_valid():
            _, created = otp_key_create(workspace=workspace, mode=form.cleaned_data["mode"],
                                        name=form.cleaned_data["name"])
            form = KeyForm()
        else:
            status = 400
    usage = console.usage_by_day(workspace=workspace)
    context.update({
        "form": form, "created": created, "keys": console.console_keys(workspace=workspace),
        "balance": balance_report(api_key=console.console_live_key(workspace=workspace)),
        "usage": usage, "chart": stacked_days(usage),
    })
    return render(request, "otp_app/console_workspace.html", context, status=status)


@login_required
@require_POST
def console_key_revoke(request, org_id, key_id):
    context = workspace_context(request, org_id)
    require(context, KEYS_SCOPE)
    key = console.console_key_get(workspace=context["workspace"], key_id=key_id)
    otp_key_revoke(key=key)
    messages.success(request, f"Key {key.prefix}… revoked.")
    return redirect("otp-console-workspace", org_id=context["workspace"].slug)


@login_required
def console_log(request, org_id):
    """The verification log: records filtered by status, channel and day, with their delivery attempts."""
    context = _context(request, org_id, "log")
    form = LogFilterForm(request.GET or None)
    filters, page_number, status = {}, 1, 200
    if form.is_bound and not form.is_valid():
        status = 400  # the errors are shown; the unfiltered log below
    elif form.is_bound:
        filters = {k: form.cleaned_data[k] for k in ("status", "channel", "day_from", "day_to")}
        page_number = form.cleaned_data["page"] or 1
    records = console.records_log(workspace=context["workspace"], **filters)
    page = Paginator(records, LOG_PAGE_SIZE).get_page(page_number)
    query = request.GET.copy()
    query.pop("page", None)
    context.update({"form": form, "page": page, "query": query.urlencode()})
    return render(request, "otp_app/console_log.html", context, status=status)


def _sandbox(request, context, *, send_form=None, verify_error=None, verify_typed=None, status=200):
    """The sandbox page; after an error, the forms show what was typed (`send_form` bound to the request,
    `verify_typed` the record and code of a refused verify)."""
    workspace = context["workspace"]
    context.update({
        "send_form": send_form if send_form is not None else TestSendForm(), "verify_error": verify_error,
        "verify_typed": verify_typed or {},
        "test_key": console.console_test_key(workspace=workspace),
        "outbox": console.console_outbox(workspace=workspace),
    })
    return render(request, "otp_app/console_sandbox.html", context, status=status)


@login_required
def console_sandbox(request, org_id):
    """Send a test code and read the sandbox outbox (the code a test key's send would have delivered)."""
    return _sandbox(request, _context(request, org_id, "sandbox"))


@login_required
@require_POST
def console_test_send(request, org_id):
    context = _context(request, org_id, "sandbox")
    require(context, SEND_SCOPE)
    form = TestSendForm(request.POST)
    if not form.is_valid():
        return _sandbox(request, context, send_form=form, status=400)
    try:
        result = console.console_test_send(workspace=context["workspace"], **form.cleaned_data)
    except ApplicationError as exc:
        form.add_error(None, exc.message)
        return _sandbox(request, context, send_form=form, status=exc.status)
    messages.success(request, f"Test code sent to {result.record.recipient} ({result.record.pk}); "
                              "it is in the outbox below.")
    return redirect("otp-console-sandbox", org_id=context["workspace"].slug)


@login_required
@require_POST
def console_test_verify(request, org_id):
    context = _context(request, org_id, "sandbox")
    require(context, SEND_SCOPE)
    form = VerifyForm(request.POST)
    typed = {"record": request.POST.get("record", "")[:40], "code": request.POST.get("code", "")[:6]}
    if not form.is_valid():
        return _sandbox(request, context, verify_error="Enter the 6 digits of the code.", verify_typed=typed,
                        status=400)
    try:
        record = console.console_test_verify(workspace=context["workspace"], record_id=form.cleaned_data["record"],
                                             code=form.cleaned_data["code"])
    except ApplicationError as exc:
        return _sandbox(request, context, verify_error=exc.message, verify_typed=typed, status=exc.status)
    if record.status == OtpRecord.Status.VERIFIED:
        messages.success(request, f"{record.pk} verified.")
    else:
        messages.warning(request, f"Wrong code for {record.pk}: {record.attempts_left} attempts left.")
    return redirect("otp-console-sandbox", org_id=context["workspace"].slug)


@login_required
def console_routing(request, org_id):
    """Routing rules, defaults and channel configuration (read-only)."""
    context = _context(request, org_id, "routing")
    context["routing"] = console.routing_overview(workspace=context["workspace"])
    return render(request, "otp_app/console_routing.html", context)
