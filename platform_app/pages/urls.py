"""Platform HTML pages: the dashboard."""
from django.urls import include, path

from platform_app.api.domains.caddy_ask import caddy_ask
from platform_app.pages import (agents, automation, deployments, domains, edge, env, identity, project_settings,
                                 projects, teams, views)

urlpatterns = [
    path("", views.home, name="home"),
    # Account (platform_app/pages/identity.py)
    path("dashboard/signup/", identity.sign_up, name="signup"),
    path("dashboard/login/", identity.sign_in, name="login"),
    path("dashboard/logout/", identity.sign_out, name="logout"),
    path("dashboard/account/", identity.account, name="account"),
    path("device", identity.device_approve, name="device"),
    path("dashboard/account/mfa/", identity.mfa_enrol, name="mfa-enrol"),
    path("dashboard/account/mfa/<str:factor_id>/remove", identity.mfa_remove, name="mfa-remove"),
    path("dashboard/account/sessions/<str:session_id>/revoke", identity.session_revoke, name="session-revoke"),
    path("dashboard/account/agents/<str:token_id>/disconnect", identity.agent_disconnect, name="agent-disconnect"),
    path("dashboard/account/email/verify/", identity.email_verification_send, name="email-verification-send"),
    path("verify-email/", identity.verify_email, name="verify-email"),
    path("invitations/<str:token>", teams.invitation_page, name="invitation"),
    # Workspaces (teams.py)
    path("dashboard/", teams.dashboard, name="dashboard"),
    path("dashboard/switch/", teams.workspace_switch, name="workspace-switch"),
    path("dashboard/<str:org_id>/", teams.workspace_page, name="dashboard-workspace"),
    path("dashboard/<str:org_id>/settings/", teams.workspace_settings, name="workspace-settings"),
    path("dashboard/<str:org_id>/members/<str:member_id>", teams.member_change, name="member-change"),
    path("dashboard/<str:org_id>/tokens/", teams.tokens_page, name="workspace-tokens"),
    path("dashboard/<str:org_id>/tokens/<str:token_id>/revoke", teams.token_revoke, name="dashboard-token-revoke"),
    path("dashboard/<str:org_id>/audit/", teams.audit_page, name="workspace-audit"),
    path("dashboard/<str:org_id>/agents/", agents.agents_page, name="workspace-agents"),
    # Projects and deployments (projects.py, deployments.py, env.py)
    path("dashboard/<str:org_id>/new/", projects.project_new, name="project-new"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/", projects.project_page, name="project"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/rollback", projects.project_rollback,
         name="project-rollback"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/settings/", project_settings.project_settings,
         name="project-settings"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/hooks/<str:hook_id>/delete", project_settings.hook_delete,
         name="project-hook-delete"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/delete", project_settings.project_delete,
         name="project-delete"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/env/", env.env_page, name="project-env"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/env/<str:env_id>/delete", env.env_var_delete,
         name="project-env-delete"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/env/<str:env_id>/update", env.env_var_update,
         name="project-env-update"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/environments/<str:environment_id>/delete",
         env.environment_delete, name="project-environment-delete"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/secret-findings/<str:finding_id>", env.finding_action,
         name="project-finding"),
    path("dashboard/<str:org_id>/deployments/<str:deployment_id>/", deployments.deployment_page, name="deployment"),
    path("dashboard/<str:org_id>/deployments/<str:deployment_id>/cancel", deployments.deployment_cancel,
         name="deployment-cancel"),
    path("dashboard/<str:org_id>/deployments/<str:deployment_id>/redeploy", deployments.deployment_redeploy,
         name="deployment-redeploy"),
    path("dashboard/<str:org_id>/deployments/<str:deployment_id>/fix-pr", deployments.deployment_fix_pr,
         name="deployment-fix-pr"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/domains/", domains.domains_page, name="dashboard-domains"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/domains/<str:domain_id>/<str:action>", domains.domain_action,
         name="dashboard-domain-action"),
    # Cron, log drains, alerts (automation.py)
    path("dashboard/<str:org_id>/projects/<str:project_id>/cron/", automation.cron_page, name="project-cron"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/cron/<str:cron_id>/<str:action>", automation.cron_action,
         name="project-cron-action"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/log-drains/", automation.drains_page, name="project-drains"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/log-drains/<str:drain_id>/<str:action>",
         automation.drain_action, name="project-drain-action"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/alerts/", automation.alerts_page, name="project-alerts"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/alerts/<str:rule_id>/delete", automation.alert_rule_delete,
         name="project-alert-delete"),
    # Firewall and analytics (edge.py)
    path("dashboard/<str:org_id>/projects/<str:project_id>/firewall/", edge.firewall_page, name="project-firewall"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/firewall/<str:rule_id>/<str:action>",
         edge.firewall_rule_action, name="project-firewall-rule"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/analytics/", edge.analytics_page, name="project-analytics"),
    # Caddy's on-demand TLS `ask` (docs/deployment.md, "Caddy"): not a page, not part of /v1
    path("internal/caddy/ask", caddy_ask, name="caddy-ask"),
]
# Resources (platform_app/pages/resources/): one module per feature
urlpatterns += [path("", include(f"platform_app.pages.resources.{feature}"))
                for feature in ("addons", "components", "buckets", "databases", "tunnel", "graduate")]
urlpatterns += [path("", include("platform_app.pages.billing.urls")), path("", include("platform_app.pages.org.urls"))]
urlpatterns += [path("", include("platform_app.pages.staff.urls")), path("", include("platform_app.pages.mcp.urls"))]
