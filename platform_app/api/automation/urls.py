"""Routes of the automation area (mounted under /v1/). `P` = `orgs/<org_id>/projects/<project_id>`."""
from django.urls import path

from platform_app.api.automation import alerts, cron, drains

O = "orgs/<str:org_id>"
P = f"{O}/projects/<str:project_id>"

urlpatterns = [
    # Cron jobs
    path(f"{P}/cron", cron.CronListView.as_view()),
    path(f"{P}/cron/<str:cron_id>", cron.CronDetailView.as_view()),
    path(f"{P}/cron/<str:cron_id>/runs", cron.CronRunListView.as_view()),
    # Log drains
    path(f"{P}/log-drains", drains.LogDrainListView.as_view()),
    path(f"{P}/log-drains/<str:drain_id>", drains.LogDrainDetailView.as_view()),
    path(f"{P}/log-drains/<str:drain_id>/test", drains.LogDrainTestView.as_view()),
    # Alert rules
    path(f"{P}/alerts", alerts.AlertRuleListView.as_view()),
    path(f"{P}/alerts/<str:rule_id>", alerts.AlertRuleDetailView.as_view()),
    path("internal/alerts/<str:rule_id>/fire", alerts.AlertFireView.as_view()),
]
