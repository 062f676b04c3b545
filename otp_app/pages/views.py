"""The OTP console under /dashboard/otp/: keys, sandbox outbox, balance. Same services as the API."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from config.errors import Forbidden
from otp_app.models import ApiKey, SandboxMessage
from otp_app.services.balance import balance_report
from otp_app.services.keys import otp_key_create, otp_key_revoke
from platform_app.services.teams.workspaces import workspace_for_member, workspaces_of

MANAGERS = ("owner", "admin")


class KeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False)
    mode = forms.ChoiceField(choices=ApiKey.Mode.choices, initial="test")


@login_required
def console_home(request):
    return render(request, "otp_app/console_home.html", {"memberships": workspaces_of(request.user)})


@login_required
def console_workspace(request, org_id):
    workspace, membership = workspace_for_member(user=request.user, ref=org_id)
    form = KeyForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        if membership.role not in MANAGERS:
            raise Forbidden("Only owners and admins manage keys.")
        _, created = otp_key_create(workspace=workspace, mode=form.cleaned_data["mode"], name=form.cleaned_data["name"])
    keys = ApiKey.objects.filter(workspace=workspace, revoked_at__isnull=True)
    test_key = keys.filter(mode="test").first()
    return render(request, "otp_app/console_workspace.html", {
        "workspace": workspace, "membership": membership, "form": form, "created": created, "keys": keys,
        "outbox": SandboxMessage.objects.filter(api_key__workspace=workspace).select_related("record")[:50],
        "balance": balance_report(api_key=keys.filter(mode="live").first() or ApiKey(workspace=workspace, mode="live")),
        "test_key": test_key,
    })


@login_required
@require_POST
def console_key_revoke(request, org_id, key_id):
    workspace, membership = workspace_for_member(user=request.user, ref=org_id)
    if membership.role not in MANAGERS:
        raise Forbidden("Only owners and admins manage keys.")
    key = get_object_or_404(ApiKey, pk=key_id, workspace=workspace)
    otp_key_revoke(key=key)
    messages.success(request, f"Key {key.prefix}… revoked.")
    return redirect("otp-console-workspace", org_id=workspace.slug)
