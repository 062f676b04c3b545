"""The public status page (`/status`, no sign-in, no JavaScript: 90 days of daily bars rendered on the server)
and the staff pages for incidents (open, update, resolve; users with `is_staff` only). Same services as
`/v1/status/...` and `/v1/admin/incidents`."""
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from config.errors import ApplicationError, Forbidden
from platform_app.models import Incident
from platform_app.pages.base import form_error
from platform_app.services.staff import incidents as incident_services
from platform_app.services.staff import status as status_services


def status_page(request):
    public = status_services.status_public()
    days = status_services.status_days()
    components = [{**c, "days": days[c["key"]]} for c in public["components"]]
    return render(request, "platform_app/staff/status.html", {
        "status": public["status"], "components": components, "slos": public["slos"],
        "incidents": public["incidents"], "history_days": settings.STATUS_HISTORY_DAYS})


def _staff_only(request) -> None:
    if not request.user.is_staff:
        raise Forbidden("Only staff can manage incidents.")


class IncidentForm(forms.Form):
    title = forms.CharField(max_length=200)
    impact = forms.ChoiceField(choices=Incident.Impact.choices)
    status = forms.ChoiceField(choices=Incident.Status.choices, initial=Incident.Status.INVESTIGATING)
    message = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text="The first update, shown on the status page.")
    components = forms.MultipleChoiceField(choices=list(settings.STATUS_COMPONENTS.items()), required=False,
                                           widget=forms.CheckboxSelectMultiple, label="Affected components")


class UpdateForm(forms.Form):
    status = forms.ChoiceField(choices=Incident.Status.choices)
    message = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))


@login_required
def incidents_page(request):
    _staff_only(request)
    form = IncidentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            incident = incident_services.incident_create(title=data["title"], impact=data["impact"],
                                                         status=data["status"], message=data["message"],
                                                         components=data["components"], actor=request.user)
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            messages.success(request, f"Incident “{incident.title}” is on the status page.")
            return redirect("staff-incident", incident_id=incident.pk)
    return render(request, "platform_app/staff/incidents.html",
                  {"form": form, "incidents": incident_services.incidents_list()},
                  status=400 if form.errors else 200)


@login_required
def incident_page(request, incident_id):
    _staff_only(request)
    incident = incident_services.incident_with_updates(incident_id=incident_id)
    form = UpdateForm(request.POST or None, initial={"status": incident.status})
    if request.method == "POST" and form.is_valid():
        try:
            incident_services.incident_update_add(incident_id=incident.pk, status=form.cleaned_data["status"],
                                                  message=form.cleaned_data["message"], actor=request.user)
        except ApplicationError as exc:
            form_error(form, exc)
        else:
            messages.success(request, "Update posted." if form.cleaned_data["status"] != "resolved"
                             else "Incident resolved.")
            return redirect("staff-incident", incident_id=incident.pk)
    return render(request, "platform_app/staff/incident.html", {"incident": incident, "form": form},
                  status=400 if form.errors else 200)
