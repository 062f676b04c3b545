"""Environment variables and environments of a project: values masked, secrets revealed (and audited) only on
request and only for roles holding `env:read`, dotenv import, custom environments. Same services as the API."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from platform_app.models import EnvVar
from platform_app.pages.base import client_ip, form_error, project_context, require
from platform_app.services.env import env as services
from platform_app.services.env.secret_scan import finding_ignore, finding_import
from platform_app.services.env.selectors import secret_findings_open

TYPES = [(t.value, t.label) for t in EnvVar.Type]


class _Targets(forms.Form):
    targets = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple, label="Environments")
    type = forms.ChoiceField(choices=TYPES, initial=EnvVar.Type.SECRET,
                             help_text="Secret values are masked even for those who may read them.")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        names = services.environment_names(project)
        self.fields["targets"].choices = [(n, n) for n in names]
        self.fields["targets"].initial = [n for n in names if n in ("production", "preview")]


class VarForm(_Targets):
    key = forms.CharField(max_length=256, help_text="Letters, digits and _, not starting with a digit.")
    value = forms.CharField(max_length=70_000, widget=forms.Textarea(attrs={"rows": 2}), required=False)
    branch = forms.CharField(max_length=200, required=False, help_text="Only for this branch; empty = every branch.")
    field_order = ("key", "value", "type", "targets", "branch")


class ImportForm(_Targets):
    dotenv = forms.CharField(max_length=1_000_000, widget=forms.Textarea(attrs={"rows": 6}), label=".env file",
                             help_text="KEY=value lines; existing keys with these environments are updated.")
    field_order = ("dotenv", "type", "targets")


class EnvironmentForm(forms.Form):
    name = forms.CharField(max_length=64, help_text="Lowercase letters, digits and dashes.")
    branch_pattern = forms.CharField(max_length=200, required=False, help_text="Pushes to matching branches deploy "
                                     "here, e.g. release/*")


@login_required
def env_page(request, org_id, project_id):
    """GET lists; POST `add`, `import` or `environment` changes (env:write); POST `reveal` shows the secret
    values (env:read, audited)."""
    context = project_context(request, org_id, project_id)
    project, action = context["project"], request.POST.get("action")
    var_form = VarForm(request.POST if action == "add" else None, project=project, prefix="v")
    import_form = ImportForm(request.POST if action == "import" else None, project=project, prefix="i")
    env_form = EnvironmentForm(request.POST if action == "environment" else None, prefix="e")
    reveal = False
    if request.method == "POST":
        if action == "reveal":
            require(context, "env:read")
            reveal = True
        else:
            require(context, "env:write")
            done = _change(request, project, action, {"add": var_form, "import": import_form, "environment": env_form})
            if done:
                return redirect("project-env", org_id=context["workspace"].slug, project_id=project.slug)
    variables = list(services.env_vars_list(project=project)) if context["can"]["env_read"] else []
    if reveal:
        services.env_reveal_audit(project=project, keys=[v.key for v in variables if v.type == EnvVar.Type.SECRET],
                                  actor=request.user, ip=client_ip(request))
    for var in variables:
        var.shown = services.value_of(var) if (reveal or var.type == EnvVar.Type.PLAIN) else None
    context.update(tab="env", variables=variables, revealed=reveal, var_form=var_form, import_form=import_form,
                   env_form=env_form, environments=services.environments_for(project),
                   findings=list(secret_findings_open(project=project).order_by("-last_seen_at")))
    failed = var_form.errors or import_form.errors or env_form.errors
    return render(request, "platform_app/env/env.html", context, status=400 if failed else 200)


def _change(request, project, action, forms_by_action) -> bool:
    form = forms_by_action.get(action)
    if form is None or not form.is_valid():
        return False
    values, ip = form.cleaned_data, client_ip(request)
    try:
        if action == "add":
            services.env_var_create(project=project, key=values["key"], value=values["value"], type=values["type"],
                                    targets=values["targets"], branch=values["branch"] or None, actor=request.user,
                                    ip=ip)
            messages.success(request, f"{values['key']} added; redeploy to use it.")
        elif action == "import":
            result = services.env_import(project=project, dotenv=values["dotenv"], targets=values["targets"],
                                         type=values["type"], actor=request.user, ip=ip)
            messages.success(request, f"Imported: {result['created']} added, {result['updated']} updated.")
        else:
            services.environment_create(project=project, name=values["name"], branch_pattern=values["branch_pattern"],
                                        actor=request.user)
            messages.success(request, f"Environment {values['name']} created.")
    except ApplicationError as exc:
        form_error(form, exc)
        return False
    return True


@login_required
@require_POST
def env_var_update(request, org_id, project_id, env_id):
    """A new value (and type) for one variable; its key, environments and branch stay."""
    context = project_context(request, org_id, project_id)
    require(context, "env:write")
    var = services.env_var_update(project=context["project"], env_id=env_id, value=request.POST.get("value", ""),
                                  type=request.POST.get("type", ""),
                                  actor=request.user, ip=client_ip(request))
    messages.success(request, f"{var.key} updated; redeploy to use it.")
    return redirect("project-env", org_id=context["workspace"].slug, project_id=context["project"].slug)


@login_required
@require_POST
def env_var_delete(request, org_id, project_id, env_id):
    context = project_context(request, org_id, project_id)
    require(context, "env:write")
    services.env_var_delete(project=context["project"], env_id=env_id, actor=request.user, ip=client_ip(request))
    messages.success(request, "Variable removed; redeploy to apply.")
    return redirect("project-env", org_id=context["workspace"].slug, project_id=context["project"].slug)


@login_required
@require_POST
def environment_delete(request, org_id, project_id, environment_id):
    context = project_context(request, org_id, project_id)
    require(context, "env:write")
    services.environment_delete(project=context["project"], environment_id=environment_id)
    messages.success(request, "Environment removed.")
    return redirect("project-env", org_id=context["workspace"].slug, project_id=context["project"].slug)


@login_required
@require_POST
def finding_action(request, org_id, project_id, finding_id):
    """A committed secret a build found: `import` it as a secret variable (key, environments) or `ignore` it."""
    context = project_context(request, org_id, project_id)
    require(context, "env:write")
    project = context["project"]
    if request.POST.get("action") == "ignore":
        finding_ignore(project=project, finding_id=finding_id, actor=request.user)
        messages.success(request, "Finding ignored; it will not come back.")
    else:
        _, var = finding_import(project=project, finding_id=finding_id, key=request.POST.get("key", ""),
                                targets=request.POST.getlist("targets"), actor=request.user, ip=client_ip(request))
        messages.success(request, f"Imported as the secret {var.key}; remove it from the repository and redeploy.")
    return redirect("project-env", org_id=context["workspace"].slug, project_id=project.slug)
