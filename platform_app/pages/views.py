"""Server-rendered platform pages: sign-in, workspaces, API tokens.

Pages call the same services as the API; Django's session cookie (with CSRF)
authenticates them, and the API accepts that cookie too.
"""
from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config import ratelimit
from config.errors import ApplicationError
from platform_app.models import ApiToken
from platform_app.services.identity import tokens as token_services
from platform_app.services.identity.scopes import ALL_SCOPES
from platform_app.services.teams.workspaces import workspace_for_member, workspaces_of


def home(request):
    return render(request, "home.html")


class SignInForm(forms.Form):
    email = forms.EmailField()
    password = forms.CharField(widget=forms.PasswordInput)
    totp_code = forms.CharField(required=False, label="TOTP code (if enabled)", max_length=8)


def sign_in(request):
    """The dashboard sign-in: same brute-force limits and MFA rule as the API."""
    from django.contrib.auth import login

    from platform_app.services.identity.auth import user_authenticate
    from platform_app.services.identity.mfa import sign_in_second_factor

    form = SignInForm(request.POST or None)
    error = None
    if request.method == "POST" and form.is_valid():
        ip = ratelimit.client_ip(request)
        try:
            user = user_authenticate(email=form.cleaned_data["email"], password=form.cleaned_data["password"], ip=ip)
            sign_in_second_factor(user=user, totp_code=form.cleaned_data["totp_code"], ip=ip)
        except ApplicationError as exc:
            error = exc.message
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            target = request.GET.get("next", "")
            return redirect(target if target.startswith("/") and not target.startswith("//") else "dashboard")
    return render(request, "platform_app/sign_in.html", {"form": form, "error": error}, status=400 if error else 200)


sign_out = auth_views.LogoutView.as_view(next_page="/")


@login_required
def dashboard(request):
    return render(request, "platform_app/dashboard.html", {"memberships": workspaces_of(request.user)})


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    scopes = forms.MultipleChoiceField(choices=[(s, s) for s in ALL_SCOPES], widget=forms.CheckboxSelectMultiple)
    expires = forms.CharField(required=False, initial="90d", help_text="30m, 12h, 90d, 2w; empty = never")


@login_required
def workspace_page(request, org_id):
    workspace, membership = workspace_for_member(user=request.user, ref=org_id)
    form = TokenForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            scopes, expires = token_services.validate_token_input(scopes=form.cleaned_data["scopes"],
                                                                  expires=form.cleaned_data["expires"] or None)
            token, created = token_services.api_token_create(
                user=request.user, name=form.cleaned_data["name"], scopes=scopes, expires=expires,
                workspace=workspace, ip=ratelimit.client_ip(request))
        except ApplicationError as exc:
            form.add_error(None, exc.message)
    tokens = ApiToken.objects.filter(user=request.user, workspace=workspace, revoked_at__isnull=True)
    projects = workspace.projects.order_by("name")
    return render(request, "platform_app/workspace.html", {
        "workspace": workspace, "membership": membership, "form": form, "created": created,
        "tokens": tokens, "projects": projects, "members": workspace.memberships.select_related("user"),
    })


@login_required
@require_POST
def token_revoke(request, org_id, token_id):
    workspace, _ = workspace_for_member(user=request.user, ref=org_id)
    token = token_services.api_token_get(user=request.user, token_id=token_id)
    if token.workspace_id == workspace.pk:
        token_services.api_token_revoke(token=token, actor=request.user, ip=ratelimit.client_ip(request))
        messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("dashboard-workspace", org_id=workspace.slug)
