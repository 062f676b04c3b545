"""The project's Add-ons page: what is provisioned, its managed variables, add (admin) and delete (admin).
Credentials never show: builds and instances get them as variables."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from platform_app.pages.base import client_ip, form_error, project_context, require
from platform_app.services.resources import addons as services

P = "dashboard/<str:org_id>/projects/<str:project_id>"


class AddonForm(forms.Form):
    kind = forms.ChoiceField(choices=[("postgres", "PostgreSQL database"), ("redis", "Redis key space")])
    name = forms.CharField(max_length=40, required=False,
                           help_text="Prefixes its variables when the project has several (default: the kind).")


@login_required
def addons_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = AddonForm(request.POST or None)
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            try:
                addon = services.addon_create(project=project, kind=form.cleaned_data["kind"],
                                              name=form.cleaned_data["name"] or None, actor=request.user,
                                              ip=client_ip(request))
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                messages.success(request, f"Add-on {addon.name} is being provisioned; builds and instances get "
                                          f"{', '.join(services.addon_env_names(addon))} once it is ready.")
                return redirect("project-addons", org_id=context["workspace"].slug, project_id=project.slug)
    rows = [{"addon": a, "env": services.addon_env_names(a)} for a in services.addons_list(project=project)]
    context.update(tab="addons", form=form, addons=rows)
    return render(request, "platform_app/resources/addons.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def addon_delete(request, org_id, project_id, addon_id):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    addon = services.addon_delete(project=context["project"], addon_id=addon_id, actor=request.user,
                                  ip=client_ip(request))
    messages.success(request, f"Add-on {addon.name} deleted: its variables are gone, its data is dropped later.")
    return redirect("project-addons", org_id=context["workspace"].slug, project_id=context["project"].slug)


urlpatterns = [
    path(f"{P}/addons/", addons_page, name="project-addons"),
    path(f"{P}/addons/<str:addon_id>/delete", addon_delete, name="project-addon-delete"),
]
