"""Routes of the domains area (mounted under /v1/). `P` = `orgs/<org_id>/projects/<project_id>`."""
from django.urls import path  # noqa: F401

O = "orgs/<str:org_id>"
P = f"{O}/projects/<str:project_id>"

urlpatterns = []
