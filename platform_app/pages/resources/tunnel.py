"""The project's Tunnel page (docs/tunnel.md): the tunnel's state (status, address, clients, since when, bytes),
Start (the token and the exact command, shown once, on the page that started it) and Stop, for the `admin` scope;
everyone in the workspace reads. Same services as the API."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from platform_app.pages.base import client_ip, project_context, require
from platform_app.services.resources import tunnels as services

BADGES = {"connected": "ok", "waiting": "pending", "stopped": "canceled"}  # the stylesheet's badge colours


class TunnelStartForm(forms.Form):
    port = forms.IntegerField(min_value=1, max_value=65535, initial=services.DEFAULT_PORT, label="Local port",
                              help_text="The port your development server listens on (for the command).")


@login_required
def tunnel_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = TunnelStartForm(request.POST or None)
    started = None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            _, token = services.tunnel_start(project=project, actor=request.user, ip=client_ip(request))
            started = {"token": token, "command": services.tunnel_command(project=project, token=token,
                                                                          port=form.cleaned_data["port"])}
    state = services.tunnel_state(project=project)
    context.update(tab="tunnel", form=form, state=state, badge=BADGES[state.status], started=started)
    return render(request, "platform_app/resources/tunnel.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def tunnel_stop(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    services.tunnel_stop(project=context["project"], actor=request.user, ip=client_ip(request))
    messages.success(request, "Tunnel stopped: its token no longer works.")
    return redirect("project-tunnel", org_id=context["workspace"].slug, project_id=context["project"].slug)


P = "dashboard/<str:org_id>/projects/<str:project_id>"
urlpatterns = [
    path(f"{P}/tunnel/", tunnel_page, name="project-tunnel"),
    path(f"{P}/tunnel/stop", tunnel_stop, name="project-tunnel-stop"),
]
