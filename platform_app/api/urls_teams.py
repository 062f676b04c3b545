"""Routes of the teams area (mounted under /v1/): workspace settings, members, invitations,
projects, groups, templates, framework detection. `O` = `orgs/<org_id>`, `P` = `O/projects/<project_id>`."""
from django.urls import path

from platform_app.api.projects import framework
from platform_app.api.projects import projects
from platform_app.api.teams import teams

O = "orgs/<str:org_id>"
P = f"{O}/projects/<str:project_id>"

urlpatterns = [
    path(f"{O}/stats", teams.WorkspaceStatsView.as_view()),
    path(f"{O}/activity", teams.WorkspaceActivityView.as_view()),
    path(f"{O}/members", teams.MemberListView.as_view()),
    path(f"{O}/members/<str:member_id>", teams.MemberDetailView.as_view()),
    path(f"{O}/invitations", teams.WorkspaceInvitationListView.as_view()),
    path("invitations", teams.MyInvitationListView.as_view()),
    path("invitations/<str:token>", teams.InvitationDetailView.as_view()),
    path("invitations/<str:token>/accept", teams.InvitationAcceptView.as_view()),
    path("invitations/<str:token>/decline", teams.InvitationDeclineView.as_view()),
    path(f"{O}/projects", projects.ProjectListView.as_view()),
    path(f"{O}/projects/from-image", projects.ProjectFromImageView.as_view()),
    path(f"{O}/projects/from-template", projects.ProjectFromTemplateView.as_view()),
    path(P, projects.ProjectDetailView.as_view()),
    path(f"{P}/auto-deploy-status", projects.ProjectAutoDeployStatusView.as_view()),
    path(f"{O}/project-groups", projects.ProjectGroupListView.as_view()),
    # GET takes the slug, DELETE the id; both are accepted by either method.
    path(f"{O}/project-groups/<str:slug>", projects.ProjectGroupBySlugView.as_view()),
    path("templates", projects.TemplateListView.as_view()),
    path("framework/repo-info", framework.RepoInfoView.as_view()),
    path("framework/detect", framework.DetectView.as_view()),
    path("framework/discover", framework.DiscoverView.as_view()),
]
