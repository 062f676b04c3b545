"""Workspace pages: the dashboard (workspaces, new workspace), a workspace's projects, its settings, members
and invitations, API tokens and the audit log. Same services and role rules as the API."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, NotFound
from platform_app.api.kept import kept_page_part
from platform_app.choices import Role
from platform_app.pages.base import (client_ip, form_error, page_number, require, workspace_context,
                                     workspace_form_create)
from platform_app.pages.kept import kept_page
from platform_app.services.deployments.selectors import projects_with_last_deployment
from platform_app.services.identity import tokens as token_services
from platform_app.services.identity.email_verification import email_is_verified
from platform_app.services.identity.scopes import ALL_SCOPES, role_allows
from platform_app.services.teams import invitations, members
from platform_app.services.identity.selectors import api_tokens_active
from platform_app.services.org.access import workspace_for_member
from platform_app.services.teams.selectors import audit_events, invitations_pending, members_of
from platform_app.services.teams.workspaces import workspace_update, workspaces_of
from platform_app.templatetags.dashboard import project_rows

ROLE_CHOICES = [(r.value, r.label) for r in Role]


class WorkspaceForm(forms.Form):
    name = forms.CharField(max_length=100)
    slug = forms.SlugField(max_length=40, required=False, help_text="Used in addresses; empty = from the name.")


@login_required
def dashboard(request):
    """The signed-in user's workspaces, invitations waiting for them, and a form for a new workspace."""
    form = WorkspaceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        workspace = workspace_form_create(request, form)
        if workspace is not None:
            messages.success(request, f"Workspace “{workspace.name}” created.")
            return redirect("dashboard-workspace", org_id=workspace.slug)
    verified = email_is_verified(request.user)  # invitations to an unverified address are withheld; say why
    return render(request, "platform_app/teams/dashboard.html", {
        "memberships": workspaces_of(request.user), "form": form, "email_unverified": not verified,
        "invitations": invitations.invitations_for_user(request.user) if verified else [],
    }, status=400 if form.errors else 200)


@login_required
def workspace_switch(request):
    """The workspace switcher's target (a GET form, so it works without JavaScript)."""
    workspace, _ = workspace_for_member(user=request.user, ref=request.GET.get("to", "")[:64])
    return redirect("dashboard-workspace", org_id=workspace.slug)


@login_required
def workspace_page(request, org_id):
    """The workspace's projects, a page of 50 by name (searchable), each with its address and last deployment;
    the page and the table's rows (shared by the members of a role) are kept until a project or deployment of the
    workspace changes (pages/kept.py, api/kept.py)."""
    context = workspace_context(request, org_id)
    workspace = context["workspace"]
    search = request.GET.get("q", "").strip()[:100]
    page = page_number(request)

    def table() -> tuple[str, bool, bool]:
        projects, more = projects_with_last_deployment(workspace=workspace, search=search, page=page)
        active = any(p.last_deployment and not p.last_deployment.is_finished for p in projects)
        return project_rows(projects, workspace), more, active

    def rendered():
        rows, more, active = kept_page_part(context, ("projects", workspace.slug, search, page), table,
                                            size=lambda value: len(value[0]))
        context.update(tab="projects", rows=rows, search=search, page=page, more=more, active=active)
        if request.htmx:  # the table's own refresh while builds run
            return render(request, "platform_app/teams/_projects.html", context)
        return render(request, "platform_app/teams/workspace.html", context)

    return kept_page(request, context, rendered)


class InviteForm(forms.Form):
    email = forms.EmailField(max_length=254)
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Role.DEVELOPER)


@login_required
def workspace_settings(request, org_id):
    """Name and slug, members (role, removal) and invitations."""
    context = workspace_context(request, org_id)
    workspace = context["workspace"]
    action = request.POST.get("action")
    form = WorkspaceForm(request.POST if action == "rename" else None,
                         initial={"name": workspace.name, "slug": workspace.slug})
    invite = InviteForm(request.POST if action == "invite" else None)
    if request.method == "POST":
        require(context, "admin")
        bound = form if action == "rename" else invite
        if bound.is_valid():
            try:
                if action == "rename":
                    workspace = workspace_update(workspace=workspace, actor=request.user,
                                                 name=form.cleaned_data["name"],
                                                 slug=form.cleaned_data["slug"] or None, ip=client_ip(request))
                    messages.success(request, "Workspace saved.")
                else:
                    invitations.invitation_create(workspace=workspace, actor_membership=context["membership"],
                                                  email=invite.cleaned_data["email"], role=invite.cleaned_data["role"],
                                                  ip=client_ip(request))
                    messages.success(request, f"Invitation sent to {invite.cleaned_data['email']}.")
            except ApplicationError as exc:
                form_error(bound, exc)
            else:
                return redirect("workspace-settings", org_id=workspace.slug)
    context.update(tab="settings", form=form, invite=invite, members=members_of(workspace=workspace),
                   invitations=invitations_pending(workspace=workspace), roles=ROLE_CHOICES)
    return render(request, "platform_app/teams/settings.html", context,
                  status=400 if form.errors or invite.errors else 200)


@login_required
@require_POST
def member_change(request, org_id, member_id):
    """Change a member's role (`role`) or remove them (`remove`)."""
    context = workspace_context(request, org_id)
    require(context, "admin")
    workspace = context["workspace"]
    if request.POST.get("remove"):
        removed = members.member_remove(workspace=workspace, actor_membership=context["membership"],
                                        member_id=member_id, ip=client_ip(request))
        messages.success(request, f"{removed.user.email} removed.")
    else:
        changed = members.member_role_change(workspace=workspace, actor_membership=context["membership"],
                                             member_id=member_id, role=request.POST.get("role", ""),
                                             ip=client_ip(request))
        messages.success(request, f"{changed.user.email} is now {changed.role}.")
    return redirect("workspace-settings", org_id=workspace.slug)


@login_required
def invitation_page(request, token):
    """The link of an invitation email: what it offers, with accept and decline (once the address is verified)."""
    if not email_is_verified(request.user):
        return render(request, "platform_app/teams/invitation.html", {"invitation": None, "email_unverified": True},
                      status=403)
    invitation = invitations.invitation_by_token(token)
    if invitation.email.lower() != request.user.email.lower():
        return render(request, "platform_app/teams/invitation.html", {"invitation": None}, status=404)
    if request.method == "POST":
        answer = request.POST.get("answer")
        if answer == "accept":
            membership = invitations.invitation_accept(raw_token=token, user=request.user, ip=client_ip(request))
            messages.success(request, f"You joined {membership.workspace.name} as {membership.role}.")
            return redirect("dashboard-workspace", org_id=membership.workspace.slug)
        invitations.invitation_decline(raw_token=token, user=request.user, ip=client_ip(request))
        messages.info(request, "Invitation declined.")
        return redirect("dashboard")
    return render(request, "platform_app/teams/invitation.html", {"invitation": invitation})


class TokenForm(forms.Form):
    """Only the scopes the member's role holds are offered (a token never exceeds its owner's role)."""
    name = forms.CharField(max_length=100)
    scopes = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple)
    expires = forms.CharField(required=False, initial="90d", max_length=16,
                              help_text="30m, 12h, 90d, 2w; empty = never")

    def __init__(self, *args, role: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scopes"].choices = [(s, s) for s in ALL_SCOPES if role_allows(role, s)]


@login_required
def tokens_page(request, org_id):
    """The signed-in member's API tokens for this workspace: create (shown once) and revoke."""
    context = workspace_context(request, org_id)
    workspace = context["workspace"]
    role = context["membership"].role
    form = TokenForm(request.POST or None, role=role)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            scopes, expires = token_services.validate_token_input(scopes=form.cleaned_data["scopes"],
                                                                  expires=form.cleaned_data["expires"] or None)
            _, created = token_services.api_token_create(
                user=request.user, name=form.cleaned_data["name"], scopes=scopes, expires=expires,
                workspace=workspace, ip=client_ip(request))
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            form = TokenForm(role=role)
    context.update(tab="tokens", form=form, created=created,
                   tokens=api_tokens_active(user=request.user, workspace=workspace).order_by("-created_at"))
    return render(request, "platform_app/teams/tokens.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke(request, org_id, token_id):
    context = workspace_context(request, org_id)
    workspace = context["workspace"]
    token = token_services.api_token_get(user=request.user, token_id=token_id)
    if token.workspace_id != workspace.pk:
        raise NotFound("No such API token.")
    token_services.api_token_revoke(token=token, actor=request.user, ip=client_ip(request))
    messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("workspace-tokens", org_id=workspace.slug)


@login_required
def audit_page(request, org_id):
    context = workspace_context(request, org_id)
    action = request.GET.get("action", "")[:64]
    context.update(tab="audit", action=action, events=audit_events(workspace=context["workspace"], action=action))
    return render(request, "platform_app/teams/audit.html", context)
