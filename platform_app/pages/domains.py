"""The project's Domains page: each domain with the DNS records to create and its live status; add, verify,
primary and remove forms for the roles that hold the `domains` scope. Same services as the API."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config import ratelimit
from config.errors import ApplicationError
from platform_app.pages.base import project_context, require
from platform_app.services.domains import domains as services


class DomainForm(forms.Form):
    name = forms.CharField(max_length=300, label="Domain", help_text="e.g. www.example.com")
    git_branch = forms.CharField(max_length=200, required=False, label="Git branch",
                                 help_text="optional: serve this branch's latest ready deployment")


def _rows(project) -> list[dict]:
    return [{"domain": d, "verification": services.domain_verification(d), "last_check": services.domain_last_check(d)}
            for d in services.domains_of_project(project)]


@login_required
def domains_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    form = DomainForm(request.POST or None)
    if request.method == "POST":
        require(context, "domains")
        if form.is_valid():
            try:
                domain = services.domain_add(project=context["project"], name=form.cleaned_data["name"],
                                             git_branch=form.cleaned_data["git_branch"] or None, actor=request.user,
                                             ip=ratelimit.client_ip(request))
            except ApplicationError as exc:
                form.add_error("name", exc.message)
            else:
                messages.success(request, f"{domain.name} added: create one of its DNS records, then verify it.")
                return redirect("dashboard-domains", org_id=context["workspace"].slug,
                                project_id=context["project"].slug)
    context.update(tab="domains", form=form, rows=_rows(context["project"]), targets=services.verification_targets())
    return render(request, "platform_app/domains/domains.html", context, status=400 if form.errors else 200)


ACTIONS = {
    "verify": (services.domain_verify, "{name} checked: {status}."),
    "primary": (services.domain_set_primary, "{name} is now the primary domain."),
    "remove": (services.domain_remove, "{name} removed."),
}


@login_required
@require_POST
def domain_action(request, org_id, project_id, domain_id, action):
    context = project_context(request, org_id, project_id)
    require(context, "domains")
    if action not in ACTIONS:
        raise ApplicationError("Unknown action.", status=404, code="not_found")
    service, message = ACTIONS[action]
    domain = services.domain_get(project=context["project"], domain_id=domain_id)
    try:
        result = service(project=context["project"], domain_id=domain.pk, actor=request.user,
                         ip=ratelimit.client_ip(request))
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, message.format(name=domain.name, status=getattr(result, "status", "")))
    return redirect("dashboard-domains", org_id=context["workspace"].slug, project_id=context["project"].slug)
