"""Graduation in the dashboard: a small page linked from the project's Settings that exports the project (the
redeem code and the bundle shown once), and a workspace page that redeems a code into the workspace (the new
project's secrets shown once). Same services and role rules as the API (docs/graduation.md)."""
from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path

from config.errors import ApplicationError
from platform_app.api.resources.graduate_inputs import BUNDLE_INPUTS
from platform_app.pages.base import client_ip, form_error, project_context, require, workspace_context
from platform_app.services.resources import graduation as services


@login_required
def graduate_page(request, org_id, project_id):
    """POST exports; the code and the bundle are in this answer only."""
    context = project_context(request, org_id, project_id)
    project = context["project"]
    exported = code = None
    error = None
    if request.method == "POST":
        require(context, "admin")
        try:
            exported, code = services.graduation_export(project=project, actor=request.user, ip=client_ip(request))
        except ApplicationError as exc:
            error = exc.message
    exports = [{"graduation": g, "status": services.graduation_status(g)}
               for g in services.graduations_of(project=project)[:10]]
    context.update(tab="settings", exported=exported, code=code, error=error, exports=exports,
                   ttl_hours=settings.GRADUATION_TTL_HOURS)
    return render(request, "platform_app/resources/graduate.html", context, status=409 if error else 200)


class RedeemForm(forms.Form):
    redeem_code = forms.CharField(max_length=200, label="Redeem code",
                                  widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}))
    bundle = forms.CharField(max_length=1024 * 1024, required=False, label="Bundle",
                             widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
                             help_text="Only for a project exported by another instance of the platform.")


@login_required
def redeem_page(request, org_id):
    context = workspace_context(request, org_id)
    form = RedeemForm(request.POST or None)
    project = report = None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            try:
                project, report = services.graduation_redeem(
                    workspace=context["workspace"], code=form.cleaned_data["redeem_code"], inputs=BUNDLE_INPUTS,
                    bundle=form.cleaned_data["bundle"].strip() or None, actor=request.user, ip=client_ip(request))
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                form = RedeemForm()
    context.update(tab="projects", form=form, project=project, report=report)
    return render(request, "platform_app/resources/redeem.html", context, status=400 if form.errors else 200)


urlpatterns = [
    path("dashboard/<str:org_id>/projects/<str:project_id>/graduate/", graduate_page, name="project-graduate"),
    path("dashboard/<str:org_id>/redeem/", redeem_page, name="workspace-redeem"),
]
