"""A project's Settings tab: build settings, deploy hooks (URL shown once), preview protection and, for an image
project, its registry credentials (set, replaced, removed; never shown). Admins change them (as in the API);
everyone else reads them."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from platform_app.models import PreviewProtection
from platform_app.pages.base import client_ip, form_error, project_context, require
from platform_app.services.agents import images
from platform_app.services.deployments import hooks
from platform_app.services.deployments.selectors import deploy_hooks
from platform_app.services.edge.preview import protection_of, protection_set
from platform_app.services.projects import projects as project_services


class SettingsForm(forms.Form):
    name = forms.CharField(max_length=100)
    production_branch = forms.CharField(max_length=200)
    framework = forms.CharField(max_length=32, required=False, help_text="Empty = detected at each build.")
    install_command = forms.CharField(max_length=500, required=False)
    build_command = forms.CharField(max_length=500, required=False)
    output_directory = forms.CharField(max_length=200, required=False)
    start_command = forms.CharField(max_length=500, required=False)
    root_directory = forms.CharField(max_length=200, required=False)
    auto_deploy = forms.BooleanField(required=False, label="Deploy every push")


class HookForm(forms.Form):
    name = forms.CharField(max_length=100, label="Hook name")
    branch = forms.CharField(max_length=200, required=False, label="Branch to deploy",
                             help_text="Empty = the production branch.")


class PreviewForm(forms.Form):
    mode = forms.ChoiceField(choices=PreviewProtection.Mode.choices, widget=forms.RadioSelect,
                             label="Who may open previews")
    password = forms.CharField(max_length=128, required=False, label="Preview password",
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                               help_text="At least 8 characters; empty keeps the current one.")


class RegistryForm(forms.Form):
    username = forms.CharField(max_length=200, label="Registry user name", strip=False)
    password = forms.CharField(max_length=4096, label="Registry password or token", strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                               help_text="Kept encrypted; never shown again.")


@login_required
def project_settings(request, org_id, project_id):
    """POST `action`: `build` (settings), `hook` (new deploy hook, its URL shown once), `preview`, `registry`
    (set the registry credentials) or `registry-remove`."""
    context = project_context(request, org_id, project_id)
    project, action = context["project"], request.POST.get("action", "build")
    posted = request.POST if request.method == "POST" else None
    form = SettingsForm(posted if action == "build" else None,
                        initial={name: getattr(project, name) for name in SettingsForm.base_fields})
    hook_form = HookForm(posted if action == "hook" else None, prefix="h")
    preview_form = PreviewForm(posted if action == "preview" else None, prefix="p",
                               initial={"mode": protection_of(project).mode})
    registry_form = RegistryForm(posted if action == "registry" else None, prefix="r")
    created_url = None
    if posted is not None and action == "registry-remove":
        require(context, "admin")
        images.registry_credentials_remove(project=project, actor=request.user, ip=client_ip(request))
        messages.success(request, "Registry credentials removed; the registry is asked anonymously.")
        return redirect("project-settings", org_id=context["workspace"].slug, project_id=project.slug)
    if posted is not None:
        require(context, "admin")
        bound = {"build": form, "hook": hook_form, "preview": preview_form, "registry": registry_form}.get(action, form)
        if bound.is_valid():
            values = bound.cleaned_data
            try:
                if action == "hook":
                    _, secret = hooks.hook_create(project=project, name=values["name"], branch=values["branch"] or None)
                    created_url, hook_form = hooks.hook_url(secret), HookForm(prefix="h")
                elif action == "registry":
                    images.registry_credentials_set(project=project, actor=request.user, ip=client_ip(request),
                                                    **values)
                    messages.success(request, "Registry credentials saved; they apply from the next deployment.")
                elif action == "preview":
                    protection_set(project=project, mode=values["mode"], password=values["password"] or None,
                                   actor=request.user)
                    messages.success(request, "Preview protection saved.")
                else:
                    project_services.project_update(project=project, actor=request.user, ip=client_ip(request),
                                                    **values)
                    messages.success(request, "Settings saved; they apply from the next deployment.")
            except ApplicationError as exc:
                form_error(bound, exc)
            else:
                if created_url is None:
                    return redirect("project-settings", org_id=context["workspace"].slug, project_id=project.slug)
    failed = form.errors or hook_form.errors or preview_form.errors or registry_form.errors
    context.update(tab="settings", form=form, hook_form=hook_form, preview_form=preview_form, created_url=created_url,
                   registry_form=registry_form,
                   hooks=deploy_hooks(project=project), protection=protection_of(project))
    return render(request, "platform_app/projects/settings.html", context, status=400 if failed else 200)


@login_required
@require_POST
def hook_delete(request, org_id, project_id, hook_id):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    hooks.hook_delete(project=context["project"], hook_id=hook_id)
    messages.success(request, "Deploy hook deleted.")
    return redirect("project-settings", org_id=context["workspace"].slug, project_id=context["project"].slug)


@login_required
@require_POST
def project_delete(request, org_id, project_id):
    """Delete the project once its name is typed back (admins)."""
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    project = context["project"]
    if request.POST.get("confirm", "").strip() != project.name:
        messages.error(request, f"Type the project's name, {project.name}, to delete it.")
        return redirect("project-settings", org_id=context["workspace"].slug, project_id=project.slug)
    project_services.project_delete(project=project, actor=request.user, ip=client_ip(request))
    messages.success(request, f"Project “{project.name}” deleted.")
    return redirect("dashboard-workspace", org_id=context["workspace"].slug)
