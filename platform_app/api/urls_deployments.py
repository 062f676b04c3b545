"""Deployment routes (mounted under /v1/)."""
from django.urls import path

from platform_app.api.agents import agents
from platform_app.api.deployments import builds
from platform_app.api.deployments import deployments
from platform_app.api.deployments import doctor
from platform_app.api.deployments import hooks
from platform_app.api.deployments import sources

O = "orgs/<str:org_id>"
P = f"{O}/projects/<str:project_id>"

urlpatterns = [
    path(f"{P}/deployments", deployments.ProjectDeploymentsView.as_view()),
    path(f"{P}/sources", sources.SourceUploadView.as_view()),
    path(f"{P}/deployments/image", agents.ImageDeploymentView.as_view()),
    path(f"{P}/registry-credentials", agents.RegistryCredentialsView.as_view()),
    path(f"{P}/runtime-logs", agents.RuntimeLogsView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/instances", agents.InstanceListView.as_view()),
    # Node agents
    path(f"{O}/agents", agents.AgentListView.as_view()),
    path(f"{O}/agents/invite", agents.AgentInviteView.as_view()),
    path("agents/join", agents.AgentJoinView.as_view()),
    path("agents/<str:node_id>/heartbeat", agents.AgentHeartbeatView.as_view()),
    path("agents/<str:node_id>/leave", agents.AgentLeaveView.as_view()),
    path("agents/<str:node_id>/builds/claim", agents.AgentClaimView.as_view()),
    path("agents/<str:node_id>/artifacts/<str:deployment_id>", agents.AgentArtifactView.as_view()),
    # A build job, for the builder running it (its own token)
    path("builds/<str:deployment_id>/source", builds.BuildSourceView.as_view()),
    path("builds/<str:deployment_id>/logs", builds.BuildLogsView.as_view()),
    path("builds/<str:deployment_id>/artifact", builds.BuildArtifactView.as_view()),
    path("builds/<str:deployment_id>/finish", builds.BuildFinishView.as_view()),
    path(f"{O}/deployments", deployments.WorkspaceDeploymentsView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>", deployments.DeploymentDetailView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/events", deployments.DeploymentEventsView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/cancel", deployments.DeploymentCancelView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/logs", deployments.DeploymentLogView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/logs/stream", deployments.DeploymentLogStreamView.as_view()),
    path(f"{P}/rollback", hooks.RollbackView.as_view()),
    path(f"{P}/isr/revalidate", hooks.RevalidateView.as_view()),
    path(f"{O}/static-sites", hooks.StaticSitesView.as_view()),
    # Deploy hooks
    path(f"{P}/deploy-hooks", hooks.HookListView.as_view()),
    path(f"{P}/deploy-hooks/<str:hook_id>", hooks.HookDetailView.as_view()),
    path("hooks/deploy/<str:secret>", hooks.HookFireView.as_view()),
    # Git webhooks and the doctor
    path("webhooks/git-a", doctor.GitAWebhookView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/diagnoses", doctor.DiagnosesView.as_view()),
    path(f"{O}/deployments/<str:deployment_id>/doctor", doctor.DoctorView.as_view()),
    path(f"{O}/doctor-reports/<str:report_id>/pr", doctor.DoctorPullRequestView.as_view()),
]
