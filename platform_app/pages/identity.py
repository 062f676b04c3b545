"""Account pages: sign-up, sign-in (with the MFA step), sign-out, password, MFA enrolment, API sessions.

They call the identity services the API calls, so the same limits apply (brute-force counters, the MFA rule,
password strength). The dashboard signs in with Django's session cookie, which the API accepts too.
"""
import time

from django import forms
from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, NotFound
from config.redirects import safe_next
from platform_app.pages.base import client_ip, form_error
from platform_app.services.identity import auth, email_verification, mfa
from platform_app.services.mcp import oauth
from platform_app.services.identity.selectors import active_user, auth_session_open, auth_sessions_open

MFA_STEP_SECONDS = 300  # how long a correct password waits for its code


def _email_field():
    return forms.EmailField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))


class SignUpForm(forms.Form):
    name = forms.CharField(max_length=150, required=False, widget=forms.TextInput(attrs={"autocomplete": "name"}))
    email = _email_field()
    password = forms.CharField(max_length=128, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                               help_text="At least 10 characters; not a common password.")


class SignInForm(forms.Form):
    email = _email_field()
    password = forms.CharField(max_length=128, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))


class CodeForm(forms.Form):
    code = forms.CharField(label="Authentication code", max_length=8,
                           widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
                           help_text="The 6-digit code from your authenticator app.")


def _login(request, user):
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect(safe_next(request, "/dashboard/"))


def sign_up(request):
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = auth.user_sign_up(email=form.cleaned_data["email"], password=form.cleaned_data["password"],
                                     name=form.cleaned_data["name"])
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            messages.success(request, "Welcome! Create a workspace to start deploying.")
            return _login(request, user)
    return render(request, "platform_app/identity/sign_up.html", {"form": form, "next": safe_next(request, "")},
                  status=400 if form.errors else 200)


def sign_in(request):
    """Email and password; an account with a confirmed authenticator then asks for a code (same rule as the
    API's sign-in). The pending step lives in the session for MFA_STEP_SECONDS."""
    pending = request.session.get("mfa_pending")
    if pending and time.time() - pending.get("at", 0) > MFA_STEP_SECONDS:
        request.session.pop("mfa_pending", None)
        pending = None
    if request.method == "POST" and "code" in request.POST and pending:
        return _second_factor(request, pending)
    form = SignInForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        ip = client_ip(request)
        try:
            user = auth.user_authenticate(email=form.cleaned_data["email"], password=form.cleaned_data["password"],
                                          ip=ip)
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            if not mfa.factors_confirmed(user).exists():
                return _login(request, user)
            request.session["mfa_pending"] = {"user": user.pk, "at": time.time()}
            return render(request, "platform_app/identity/sign_in_code.html",
                          {"form": CodeForm(), "next": safe_next(request, "")})
    return render(request, "platform_app/identity/sign_in.html", {"form": form, "next": safe_next(request, "")},
                  status=400 if form.errors else 200)


def _second_factor(request, pending):
    form = CodeForm(request.POST)
    user = active_user(pending["user"])
    if user is None:
        request.session.pop("mfa_pending", None)
        return redirect("login")
    if form.is_valid():
        try:
            mfa.sign_in_second_factor(user=user, totp_code=form.cleaned_data["code"], ip=client_ip(request))
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            request.session.pop("mfa_pending", None)
            return _login(request, user)
    return render(request, "platform_app/identity/sign_in_code.html", {"form": form, "next": safe_next(request, "")},
                  status=400)


sign_out = auth_views.LogoutView.as_view(next_page="/")


class PasswordForm(forms.Form):
    current_password = forms.CharField(max_length=128,
                                       widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))
    new_password = forms.CharField(max_length=128, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                                   help_text="Signs out your other API sessions.")


class EnrolForm(forms.Form):
    factor = forms.CharField(widget=forms.HiddenInput)
    code = CodeForm.base_fields["code"]


@login_required
def account(request):
    """Password, authenticators and API sessions of the signed-in user."""
    password_form = PasswordForm(request.POST if request.POST.get("action") == "password" else None)
    if password_form.is_bound and password_form.is_valid():
        try:
            auth.password_change(user=request.user, current_password=password_form.cleaned_data["current_password"],
                                 new_password=password_form.cleaned_data["new_password"], keep_session=None,
                                 ip=client_ip(request))
        except ApplicationError as exc:
            form_error(password_form, exc)
        else:
            update_session_auth_hash(request, request.user)
            messages.success(request, "Password changed; your other sessions were signed out.")
            return redirect("account")
    return render(request, "platform_app/identity/account.html", {
        "password_form": password_form,
        "factors": [{"id": mfa.factor_id(d), "name": d.name} for d in mfa.factors_confirmed(request.user)],
        "sessions": auth_sessions_open(user=request.user),
        "agents": oauth.mcp_grants_of(request.user),
        "email_verified": email_verification.email_is_verified(request.user),
    }, status=400 if password_form.errors else 200)


@login_required
def mfa_enrol(request):
    """GET starts an enrolment (a fresh secret and its QR code); POST confirms it with a code."""
    if request.method == "POST":
        form = EnrolForm(request.POST)
        if form.is_valid():
            try:
                mfa.totp_enrol_confirm(user=request.user, factor_id=form.cleaned_data["factor"],
                                       code=form.cleaned_data["code"], ip=client_ip(request))
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                messages.success(request, "Authenticator added: sign-in now asks for a code.")
                return redirect("account")
        return render(request, "platform_app/identity/mfa_enrol.html", {"form": form, "enrolment": None}, status=400)
    enrolment = mfa.totp_enrol_start(user=request.user)
    form = EnrolForm(initial={"factor": mfa.factor_id(enrolment["device"])})
    return render(request, "platform_app/identity/mfa_enrol.html", {"form": form, "enrolment": enrolment})


@login_required
@require_POST
def mfa_remove(request, factor_id):
    mfa.factor_delete(user=request.user, factor_id=factor_id)
    messages.success(request, "Authenticator removed.")
    return redirect("account")


def verify_email(request):
    """The link of a verification email (`?token=`): no sign-in needed, the token names the account."""
    try:
        user = email_verification.email_verify(token=request.GET.get("token", "")[:500])
    except ApplicationError as exc:
        return render(request, "platform_app/identity/email_verified.html", {"error": exc.message}, status=400)
    return render(request, "platform_app/identity/email_verified.html", {"verified": user})


@login_required
@require_POST
def email_verification_send(request):
    """Email a new verification link (the dashboard's and the invitation page's button)."""
    try:
        email_verification.email_verification_send(user=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"A new link is on its way to {request.user.email}.")
    return redirect(safe_next(request, "/dashboard/"))


@login_required
@require_POST
def agent_disconnect(request, token_id):
    oauth.mcp_grant_revoke(user=request.user, token_id=token_id)
    messages.success(request, "Agent disconnected: its tokens no longer work.")
    return redirect("account")


@login_required
@require_POST
def session_revoke(request, session_id):
    session = auth_session_open(user=request.user, session_id=session_id)
    if session is None:
        raise NotFound("No such session.")
    auth.session_revoke(session=session)
    messages.success(request, "Session signed out.")
    return redirect("account")


@login_required
def device_approve(request):
    """`/device`: the signed-in user approves or denies a device's login (`svc login`, RFC 8628) by its user
    code, choosing the scopes (never above the role) and, optionally, the one workspace the token may act in,
    entered through the access service like every way into a workspace."""
    from platform_app.services.identity import device
    from platform_app.services.org.access import Credential, workspace_enter
    from platform_app.services.teams.workspaces import workspaces_of

    code = (request.POST.get("code") or request.GET.get("code") or "").strip()[:20]
    context = {"code": code, "pending": None, "workspaces": workspaces_of(request.user)}
    if not code:
        return render(request, "platform_app/identity/device.html", context)
    try:
        context["pending"] = device.device_authorization_pending(user_code=code)
        if request.method == "POST" and request.POST.get("decision") in ("approve", "deny"):
            workspace = None
            if request.POST.get("workspace"):
                workspace = workspace_enter(user=request.user, ref=request.POST["workspace"], scope=None,
                                            credential=Credential(ip=client_ip(request),
                                                                  cookie_session=request.session)).workspace
            decided = device.device_authorization_decide(
                user=request.user, user_code=code, approve=request.POST["decision"] == "approve",
                scopes=request.POST.getlist("scopes"), workspace=workspace)
            return render(request, "platform_app/identity/device.html", {**context, "decided": decided})
    except ApplicationError as exc:
        context["error"] = exc
        return render(request, "platform_app/identity/device.html", context, status=exc.status)
    return render(request, "platform_app/identity/device.html", context)
