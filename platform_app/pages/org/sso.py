"""The workspace's "Single sign-on" and "Security" tabs (owners and admins: the `admin` scope, as the API), and the
dashboard's SSO sign-in (`/sso/`, `/sso/<org>/start`, `/sso/<org id>/callback`). Same services as the API; the SCIM
token is shown once, on the page that created it."""
from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from config.redirects import safe_next
from platform_app.pages.base import client_ip, form_error, require, workspace_context
from platform_app.services.identity.oauth_state import state_binding, state_cookie_set
from platform_app.services.org import allowlist as allowlist_services
from platform_app.services.org import sso as sso_services
from platform_app.services.org.access import SSO_COOKIE_KEY


# Single sign-on settings -----------------------------------------------------------------------------

class SsoForm(forms.Form):
    enabled = forms.BooleanField(required=False, label="Enable single sign-on")
    issuer = forms.CharField(max_length=500, required=False, label="Issuer URL",
                             help_text="The provider's issuer, e.g. https://login.example.com; its discovery document "
                                       "is read now.")
    client_id = forms.CharField(max_length=255, required=False, label="Client ID")
    client_secret = forms.CharField(max_length=1000, required=False, label="Client secret",
                                    widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
                                    help_text="Stored encrypted and never shown; leave empty to keep the stored one.")
    allowed_domains = forms.CharField(max_length=5000, required=False, label="Allowed email domains",
                                      help_text="Comma-separated; people with these addresses join on their first "
                                                "sign-in.")
    default_role = forms.ChoiceField(choices=[(r, r) for r in sso_services.ASSIGNABLE_ROLES],
                                     help_text="Role of members who join by sign-in or SCIM outside role groups.")
    require_sso = forms.BooleanField(required=False, label="Require single sign-on",
                                     help_text="Members act only after signing in through the provider; owners are "
                                               "exempt (break-glass).")
    scim_enabled = forms.BooleanField(required=False, label="Accept SCIM provisioning")


def _initial(described: dict) -> dict:
    return {**described, "allowed_domains": ", ".join(described["allowed_domains"])}


@login_required
def sso_page(request, org_id):
    context = workspace_context(request, org_id)
    require(context, "admin")
    workspace = context["workspace"]
    described = sso_services.sso_describe(workspace=workspace)
    form = SsoForm(request.POST or None, initial=_initial(described))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            sso_services.sso_update(
                workspace=workspace, actor=request.user, ip=client_ip(request), enabled=data["enabled"],
                issuer=data["issuer"], client_id=data["client_id"], client_secret=data["client_secret"] or None,
                allowed_domains=[d for d in data["allowed_domains"].split(",") if d.strip()],
                require_sso=data["require_sso"], default_role=data["default_role"], scim_enabled=data["scim_enabled"])
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            messages.success(request, "Single sign-on settings saved.")
            return redirect("workspace-sso", org_id=workspace.slug)
    context.update(tab="sso", form=form, sso=described, scim_token=None)
    return render(request, "platform_app/org/sso.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def scim_token_create(request, org_id):
    context = workspace_context(request, org_id)
    require(context, "admin")
    workspace = context["workspace"]
    token = sso_services.scim_token_rotate(workspace=workspace, actor=request.user, ip=client_ip(request))
    described = sso_services.sso_describe(workspace=workspace)
    context.update(tab="sso", form=SsoForm(initial=_initial(described)), sso=described, scim_token=token)
    return render(request, "platform_app/org/sso.html", context)


@login_required
@require_POST
def sso_remove(request, org_id):
    context = workspace_context(request, org_id)
    require(context, "admin")
    sso_services.sso_delete(workspace=context["workspace"], actor=request.user, ip=client_ip(request))
    messages.success(request, "Single sign-on and SCIM removed; members stay members.")
    return redirect("workspace-sso", org_id=context["workspace"].slug)


# Security: the IP allowlist -----------------------------------------------------------------------

class AllowlistForm(forms.Form):
    cidr = forms.CharField(max_length=64, label="Network", help_text="IPv4 or IPv6 network (203.0.113.0/24, "
                                                                     "2001:db8::/32) or one address.")
    note = forms.CharField(max_length=200, required=False)
    confirm = forms.BooleanField(required=False, label="Add it even if my own address is left out")


@login_required
def security_page(request, org_id):
    context = workspace_context(request, org_id)
    require(context, "admin")
    workspace = context["workspace"]
    form = AllowlistForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            entry = allowlist_services.allowlist_entry_add(workspace=workspace, actor=request.user, cidr=data["cidr"],
                                                           note=data["note"], ip=client_ip(request),
                                                           confirm=data["confirm"])
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            messages.success(request, f"{entry.cidr} added to the allowlist.")
            return redirect("workspace-security", org_id=workspace.slug)
    context.update(tab="security", form=form, your_ip=client_ip(request),
                   entries=allowlist_services.allowlist_entries(workspace=workspace).select_related("created_by"))
    return render(request, "platform_app/org/security.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def allowlist_entry_delete(request, org_id, entry_id):
    context = workspace_context(request, org_id)
    require(context, "admin")
    workspace = context["workspace"]
    try:
        entry = allowlist_services.allowlist_entry_delete(workspace=workspace, actor=request.user, entry_id=entry_id,
                                                          ip=client_ip(request), confirm=bool(request.POST.get("confirm")))
    except ApplicationError as exc:
        if exc.status != 409:
            raise
        messages.error(request, exc.message.replace("Send `confirm: true`", "Tick the box"))
    else:
        messages.success(request, f"{entry.cidr} removed from the allowlist.")
    return redirect("workspace-security", org_id=workspace.slug)


# Signing in --------------------------------------------------------------------------------------

def sso_sign_in(request):
    """Ask for the workspace, then start its sign-in."""
    ref = request.GET.get("workspace", "").strip()
    if ref:
        return redirect("sso-start", org=ref[:100])
    return render(request, "platform_app/org/sso_sign_in.html", {"next": safe_next(request, "")})


def sso_start(request, org):
    user = request.user if request.user.is_authenticated else None
    url, _, row = sso_services.sso_sign_in_start(workspace_ref=org, page=True, user=user,
                                                 return_to=safe_next(request, ""))
    return state_cookie_set(redirect(url), row, callback_url=sso_services.sso_redirect_uri(row.workspace, page=True))


def sso_callback(request, org):
    user, workspace, state_row = sso_services.sso_sign_in_finish(
        workspace_ref=org, state=request.GET.get("state", ""), binding=state_binding(request),
        code=request.GET.get("code", ""),
        error=request.GET.get("error", ""), page=True, ip=client_ip(request))
    if request.user.pk != user.pk:
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    signed = request.session.get(SSO_COOKIE_KEY) or []
    request.session[SSO_COOKIE_KEY] = [*signed, workspace.pk] if workspace.pk not in signed else signed
    messages.success(request, f"Signed in to {workspace.name} through single sign-on.")
    return redirect(state_row.return_to or f"/dashboard/{workspace.slug}/")
