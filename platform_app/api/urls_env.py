"""Environment variables, environments, secret findings, preview protection (mounted under /v1/)."""
from django.urls import path

from platform_app.api.env import env
from platform_app.api.edge import preview

P = "orgs/<str:org_id>/projects/<str:project_id>"

urlpatterns = [
    # Environment variables
    path(f"{P}/env", env.EnvListView.as_view()),
    path(f"{P}/env/import", env.EnvImportView.as_view()),
    path(f"{P}/env/resolved", env.EnvResolvedView.as_view()),
    path(f"{P}/env/<str:env_id>", env.EnvDetailView.as_view()),
    # Environments
    path(f"{P}/environments", env.EnvironmentListView.as_view()),
    path(f"{P}/environments/<str:environment_id>", env.EnvironmentDetailView.as_view()),
    # Secret findings
    path(f"{P}/secret-findings", env.SecretFindingListView.as_view()),
    path(f"{P}/secret-findings/<str:finding_id>/import", env.SecretFindingImportView.as_view()),
    path(f"{P}/secret-findings/<str:finding_id>", env.SecretFindingDetailView.as_view()),
    # Preview protection
    path(f"{P}/preview-protection", preview.PreviewProtectionView.as_view()),
    path("preview-protection/<str:project_id>/verify", preview.PreviewVerifyView.as_view()),
    path("preview-protection/<str:project_id>/check", preview.PreviewCheckView.as_view()),
]
