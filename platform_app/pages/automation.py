"""The project's Cron, Log drains and Alerts pages: what runs, what is delivered and what fires, with the forms
and buttons the `admin` scope allows (others read). Same services as the API; a secret is shown once, on the
page that created it."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, NotFound
from platform_app.models import AlertRule
from platform_app.pages.base import form_error, project_context, require
from platform_app.services.automation import alerts as alert_services
from platform_app.services.automation import cron as cron_services
from platform_app.services.automation import drains as drain_services
from platform_app.services.automation.secret_urls import channels_masked, url_masked

RECENT = 10


# Cron -------------------------------------------------------------------------------------------

class CronForm(forms.Form):
    schedule = forms.CharField(max_length=120, initial="0 * * * *",
                               help_text="Five fields: minute hour day-of-month month day-of-week.")
    timezone = forms.CharField(max_length=64, initial="UTC", help_text="IANA name, e.g. Europe/Berlin.")
    path = forms.CharField(max_length=1024, initial="/api/cron", help_text="Called on the production deployment.")
    retries = forms.IntegerField(min_value=0, max_value=3, initial=0, help_text="Further attempts after a failure.")


@login_required
def cron_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = CronForm(request.POST or None)
    secret = None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            data = form.cleaned_data
            try:
                job, secret = cron_services.cron_job_create(project=project, schedule=data["schedule"],
                                                            path=data["path"], timezone_name=data["timezone"],
                                                            retries=data["retries"])
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                form = CronForm()
    jobs = [{"job": job, "next_runs": cron_services.next_runs(job),
             "runs": job.recent_runs}
            for job in cron_services.cron_jobs_list(project=project, recent=RECENT)]
    context.update(tab="cron", form=form, jobs=jobs, secret=secret)
    return render(request, "platform_app/automation/cron.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def cron_action(request, org_id, project_id, cron_id, action):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    project = context["project"]
    if action == "delete":
        cron_services.cron_job_delete(project=project, cron_id=cron_id)
        messages.success(request, "Cron job deleted.")
    elif action in ("enable", "disable"):
        cron_services.cron_job_update(project=project, cron_id=cron_id, enabled=action == "enable")
        messages.success(request, f"Cron job {action}d.")
    else:
        raise NotFound("Unknown action.")
    return redirect("project-cron", org_id=context["workspace"].slug, project_id=project.pk)


# Log drains -------------------------------------------------------------------------------------

class DrainForm(forms.Form):
    url = forms.CharField(max_length=2048, label="Endpoint URL", help_text="https, reachable from the internet.")
    format = forms.ChoiceField(choices=[("json", "JSON array"), ("ndjson", "NDJSON")])
    sources = forms.MultipleChoiceField(choices=[(s, s) for s in drain_services.SOURCES], initial=["build", "runtime"],
                                        widget=forms.CheckboxSelectMultiple)
    environments = forms.CharField(max_length=500, required=False, help_text="Comma-separated; empty = all.")
    sampling_rate = forms.FloatField(initial=1.0, min_value=0.0001, max_value=1, help_text="Share of lines sent.")


@login_required
def drains_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = DrainForm(request.POST or None)
    secret = None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            data = form.cleaned_data
            environments = [e.strip() for e in data["environments"].split(",") if e.strip()]
            try:
                _, secret = drain_services.drain_create(project=project, url=data["url"], format=data["format"],
                                                        sources=data["sources"], environments=environments,
                                                        sampling_rate=data["sampling_rate"])
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                form = DrainForm()
    reveal = context["can"]["admin"]  # credentials in URLs are for admins only, as in the API
    drains = [{"drain": d, "deliveries": d.recent_deliveries, "url": d.url if reveal else url_masked(d.url)}
              for d in drain_services.drains_list(project=project, recent=RECENT)]
    context.update(tab="drains", form=form, drains=drains, secret=secret)
    return render(request, "platform_app/automation/drains.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def drain_action(request, org_id, project_id, drain_id, action):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    project = context["project"]
    if action == "delete":
        drain_services.drain_delete(project=project, drain_id=drain_id)
        messages.success(request, "Log drain deleted.")
    elif action == "test":
        delivery = drain_services.drain_test(project=project, drain_id=drain_id)
        if delivery.delivered:
            messages.success(request, f"Test delivered ({delivery.status_code}, {delivery.duration_ms} ms).")
        else:
            messages.error(request, f"Test not delivered: {delivery.error}")
    else:
        raise NotFound("Unknown action.")
    return redirect("project-drains", org_id=context["workspace"].slug, project_id=project.pk)


# Alerts -----------------------------------------------------------------------------------------

class AlertRuleForm(forms.Form):
    name = forms.CharField(max_length=100)
    metric = forms.ChoiceField(choices=AlertRule.Metric.choices)
    threshold = forms.FloatField(required=False, help_text="Fires at or above: a count, seconds, a percentage or "
                                                           "milliseconds. Empty for a count: 1.")
    window_minutes = forms.IntegerField(min_value=1, max_value=1440, initial=5)
    emails = forms.CharField(max_length=2000, required=False, help_text="Comma-separated addresses.")
    webhook = forms.CharField(max_length=2048, required=False, help_text="https URL, signed like log drains.")
    members = forms.BooleanField(required=False, label="Email every workspace member")

    def channels(self) -> list[dict]:
        data, channels = self.cleaned_data, []
        emails = [e.strip() for e in data["emails"].split(",") if e.strip()]
        if emails:
            channels.append({"type": "email", "to": emails})
        if data["webhook"].strip():
            channels.append({"type": "webhook", "url": data["webhook"].strip()})
        if data["members"]:
            channels.append({"type": "members", "roles": []})
        return channels


@login_required
def alerts_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = AlertRuleForm(request.POST or None)
    secret = None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            data = form.cleaned_data
            try:
                _, secret = alert_services.alert_rule_create(
                    project=project, name=data["name"], metric=data["metric"], threshold=data["threshold"],
                    window_minutes=data["window_minutes"], channels=form.channels())
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                form = AlertRuleForm()
    reveal = context["can"]["admin"]  # webhook URLs may carry credentials: admins only, as in the API
    rules = [{"rule": r, "open": alert_services.open_alert(r), "history": r.recent_alerts,
              "channels": r.channels if reveal else channels_masked(r.channels)}
             for r in alert_services.alert_rules_list(project=project, recent=RECENT)]
    context.update(tab="alerts", form=form, rules=rules, secret=secret)
    return render(request, "platform_app/automation/alerts.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def alert_rule_delete(request, org_id, project_id, rule_id):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    alert_services.alert_rule_delete(project=context["project"], rule_id=rule_id)
    messages.success(request, "Alert rule deleted.")
    return redirect("project-alerts", org_id=context["workspace"].slug, project_id=context["project"].pk)
