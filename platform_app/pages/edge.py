"""The project's Firewall and Analytics pages: rules (add, enable, disable, delete) and recent events; analytics
on or off, page views per day as a server-rendered SVG chart, top paths and Web Vitals. Same services as the
API; changes need the `admin` scope, everyone in the workspace reads."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, NotFound
from platform_app.models import FirewallRule
from platform_app.pages.base import form_error, project_context, require
from platform_app.services.edge import analytics, firewall

RECENT_EVENTS = 50
EVENT_HOURS = 24
DAY_CHOICES = (7, 30, 90)


# Firewall -----------------------------------------------------------------------------------------

class RuleForm(forms.Form):
    name = forms.CharField(max_length=100)
    action = forms.ChoiceField(choices=FirewallRule.Action.choices, initial="deny",
                               help_text="challenge shows a check page first; rate_limit counts per address.")
    priority = forms.IntegerField(initial=100, min_value=-1_000_000, max_value=1_000_000,
                                  help_text="Lower runs first; the first matching rule decides.")
    field = forms.ChoiceField(choices=[(f, f) for f in firewall.FIELDS], label="Condition: field")
    op = forms.ChoiceField(choices=[(o, o) for o in firewall.OPS], label="Operator",
                           help_text="ip: eq or cidr; method: eq; others: eq, prefix, glob, contains.")
    value = forms.CharField(max_length=firewall.MAX_VALUE, help_text="e.g. 203.0.113.0/24, /admin, /*.php, GET")
    header = forms.CharField(max_length=100, required=False, help_text="The header's name (field header only).")
    requests = forms.IntegerField(min_value=1, max_value=1_000_000, required=False,
                                  help_text="rate_limit: requests per window and address.")
    window_seconds = forms.IntegerField(min_value=1, max_value=86_400, required=False, label="Window (seconds)")


def _rule_create(project, form) -> bool:
    data = form.cleaned_data
    condition = {"field": data["field"], "op": data["op"], "value": data["value"]}
    if data["field"] == "header":
        condition["name"] = data["header"]
    rate_limit = None
    if data["action"] == FirewallRule.Action.RATE_LIMIT and data["requests"] and data["window_seconds"]:
        rate_limit = {"requests": data["requests"], "window_seconds": data["window_seconds"]}
    try:
        firewall.firewall_rule_create(project=project, name=data["name"], action=data["action"],
                                      priority=data["priority"], conditions=[condition], rate_limit=rate_limit)
    except ApplicationError as exc:
        details = exc.details if isinstance(exc.details, dict) else {}
        names = {"conditions[0].value": "value", "conditions[0].op": "op", "conditions[0].field": "field",
                 "conditions[0].name": "header", "rateLimit": "requests"}
        target = next((names[k] for k in details if k in names), None)
        if target:
            form.add_error(target, exc.message)
        else:
            form_error(form, exc)
        return False
    return True


@login_required
def firewall_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = RuleForm(request.POST or None)
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid() and _rule_create(project, form):
            messages.success(request, f"Rule {form.cleaned_data['name']} added.")
            return redirect("project-firewall", org_id=context["workspace"].slug, project_id=project.slug)
    context.update(tab="firewall", form=form, rules=list(firewall.firewall_rules_list(project=project)),
                   events=list(firewall.firewall_events_list(project=project, hours=EVENT_HOURS)[:RECENT_EVENTS]),
                   event_hours=EVENT_HOURS)
    return render(request, "platform_app/edge/firewall.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def firewall_rule_action(request, org_id, project_id, rule_id, action):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    project = context["project"]
    if action == "delete":
        firewall.firewall_rule_delete(project=project, rule_id=rule_id)
        messages.success(request, "Rule deleted.")
    elif action in ("enable", "disable"):
        firewall.firewall_rule_update(project=project, rule_id=rule_id, enabled=action == "enable")
        messages.success(request, f"Rule {action}d.")
    else:
        raise NotFound("No such action.")
    return redirect("project-firewall", org_id=context["workspace"].slug, project_id=project.slug)


# Analytics ----------------------------------------------------------------------------------------

CHART_WIDTH, CHART_HEIGHT, CHART_TOP = 640, 160, 16


def chart(daily: list[dict]) -> dict:
    """Bar geometry of page views per day, for an inline <svg> (no script)."""
    peak = max([d["page_views"] for d in daily] + [1])
    slot = CHART_WIDTH / max(len(daily), 1)
    bars = []
    for i, d in enumerate(daily):
        height = round((CHART_HEIGHT - CHART_TOP) * d["page_views"] / peak, 1)
        bars.append({"x": round(i * slot + slot * 0.1, 1), "y": round(CHART_HEIGHT - height, 1),
                     "width": round(slot * 0.8, 1), "height": height, **d})
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "bars": bars, "peak": peak,
            "first": daily[0]["day"] if daily else None, "last": daily[-1]["day"] if daily else None}


@login_required
def analytics_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    if request.method == "POST":
        require(context, "admin")
        enabled = request.POST.get("action") == "enable"
        analytics.analytics_set(project=project, enabled=enabled)
        messages.success(request, "Analytics on: pages now carry the script." if enabled else "Analytics off.")
        return redirect("project-analytics", org_id=context["workspace"].slug, project_id=project.slug)
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    days = days if days in DAY_CHOICES else 30
    vitals = analytics.analytics_vitals(project=project, days=days)["metrics"]
    context.update(tab="analytics", days=days, day_choices=DAY_CHOICES,
                   enabled=analytics.analytics_enabled(project_id=project.pk),
                   script_url=analytics.script_url(project.pk),
                   overview=analytics.analytics_overview(project=project, days=days),
                   top_paths=analytics.analytics_top_paths(project=project, days=days, limit=10),
                   vitals=[{"name": name, "unit": "" if name == "CLS" else "ms", **vitals[name]} for name in vitals],
                   chart=chart(analytics.analytics_daily(project=project, days=days)))
    return render(request, "platform_app/edge/analytics.html", context)
