"""The project's Components page: each service with its status, size, instances, address and volumes; add,
change, deploy, delete (deploy needs `deploy`, the rest `admin`). Same services as the API."""
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, NotFound
from platform_app.models import Component, Instance
from platform_app.pages.base import client_ip, form_error, project_context, require
from platform_app.services.projects.addresses import component_url
from platform_app.services.resources import components as services

P = "dashboard/<str:org_id>/projects/<str:project_id>"


def _sizes():
    return [(key, f"{key} ({s['cpu']} CPU, {s['memory_mb']} MB)") for key, s in settings.INSTANCE_SIZES.items()]


class ComponentForm(forms.Form):
    name = forms.CharField(max_length=30)
    kind = forms.ChoiceField(choices=Component.Kind.choices)
    start_command = forms.CharField(max_length=1000, required=False, help_text="Needed for web and worker.")
    build_command = forms.CharField(max_length=1000, required=False, help_text="Instead of the project's, if set.")
    instance_size = forms.ChoiceField(choices=_sizes)
    instances = forms.IntegerField(min_value=0, max_value=services.MAX_INSTANCES, initial=1)
    health_check_path = forms.CharField(max_length=200, required=False, initial="/",
                                        help_text="Web: the path a new instance must answer before it gets traffic.")


class ScaleForm(forms.Form):
    instance_size = forms.ChoiceField(choices=_sizes)
    instances = forms.IntegerField(min_value=0, max_value=services.MAX_INSTANCES)


class VolumeForm(forms.Form):
    name = forms.CharField(max_length=30)
    mount_path = forms.CharField(max_length=200, initial="/data")
    size_gb = forms.IntegerField(min_value=1, max_value=10_000, initial=1, label="Size (GB)")


def _rows(project) -> list[dict]:
    components = services.components_list(project=project)
    instances: dict = {}
    for instance in Instance.objects.filter(component__in=components):
        instances.setdefault(instance.component_id, []).append(instance)
    return [{"component": c, "status": services.component_status(c, instances.get(c.pk, [])),
             "url": component_url(c) if c.kind != Component.Kind.WORKER else None,
             "instances": [i for i in instances.get(c.pk, []) if i.status not in ("stopped",)],
             "volumes": services.volumes_list(component=c),
             "scale": ScaleForm(initial={"instance_size": c.instance_size, "instances": c.instances},
                                prefix=c.pk),
             "volume_form": VolumeForm(prefix=f"vol-{c.pk}")} for c in components]


@login_required
def components_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = ComponentForm(request.POST or None)
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            data = form.cleaned_data
            try:
                component = services.component_create(project=project, actor=request.user, ip=client_ip(request),
                                                      **{**data, "health_check_path": data["health_check_path"] or ""})
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                messages.success(request, f"Component {component.name} added: deploy it to run it.")
                return redirect("project-components", org_id=context["workspace"].slug, project_id=project.slug)
    context.update(tab="components", form=form, components=_rows(project))
    return render(request, "platform_app/resources/components.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def component_action(request, org_id, project_id, component_id, action):
    context = project_context(request, org_id, project_id)
    project, user, ip = context["project"], request.user, client_ip(request)
    component = services.component_get(project=project, component_id=component_id)
    try:
        if action == "deploy":
            require(context, "deploy")
            deployment = services.component_deploy(project=project, component_id=component.pk, actor=user, ip=ip)
            return redirect("deployment", org_id=context["workspace"].slug, deployment_id=deployment.pk)
        require(context, "admin")
        if action == "scale":
            scale = ScaleForm(request.POST, prefix=component.pk)
            if not scale.is_valid():
                raise ApplicationError("Choose a size and 0 to 100 instances.")
            services.component_update(project=project, component_id=component.pk, actor=user, ip=ip,
                                      **scale.cleaned_data)
            messages.success(request, f"{component.name}: {scale.cleaned_data['instances']} × "
                                      f"{scale.cleaned_data['instance_size']}.")
        elif action == "delete":
            services.component_delete(project=project, component_id=component.pk, actor=user, ip=ip)
            messages.success(request, f"Component {component.name} deleted.")
        elif action == "add-volume":
            volume = VolumeForm(request.POST, prefix=f"vol-{component.pk}")
            if not volume.is_valid():
                raise ApplicationError("Give the volume a name, an absolute mount path and a size.")
            services.volume_create(project=project, component_id=component.pk, actor=user, ip=ip,
                                   **volume.cleaned_data)
            messages.success(request, f"Volume {volume.cleaned_data['name']} added to {component.name}.")
        elif action.startswith("delete-volume-"):
            services.volume_delete(project=project, component_id=component.pk, actor=user, ip=ip,
                                   volume_id=action.removeprefix("delete-volume-"))
            messages.success(request, "Volume deleted.")
        else:
            raise NotFound("Unknown action.")
    except ApplicationError as exc:
        if exc.status in (403, 404):
            raise
        messages.error(request, exc.message)
    return redirect("project-components", org_id=context["workspace"].slug, project_id=project.slug)


urlpatterns = [
    path(f"{P}/components/", components_page, name="project-components"),
    path(f"{P}/components/<str:component_id>/<str:action>", component_action, name="project-component-action"),
]
