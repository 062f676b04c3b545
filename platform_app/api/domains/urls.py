"""Routes of the domains area (mounted under /v1/). `P` = `orgs/<org_id>/projects/<project_id>`."""
from django.urls import path

from platform_app.api.domains import domains

O = "orgs/<str:org_id>"
P = f"{O}/projects/<str:project_id>"

urlpatterns = [
    path(f"{P}/domains", domains.DomainListView.as_view()),
    path(f"{P}/domains/<str:domain_id>", domains.DomainDetailView.as_view()),
    path(f"{P}/domains/<str:domain_id>/verify", domains.DomainVerifyView.as_view()),
    path(f"{P}/domains/<str:domain_id>/primary", domains.DomainPrimaryView.as_view()),
    path(f"{O}/domains", domains.WorkspaceDomainListView.as_view()),
    path("platform/verification-targets", domains.VerificationTargetsView.as_view()),
]
