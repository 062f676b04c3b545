"""SCIM 2.0 routes (mounted at /scim/v2/ by config/urls.py; RFC 7644), answered in SCIM's own error schema."""
from django.urls import path, re_path

from platform_app.api.org import scim

urlpatterns = [
    path("Users", scim.UsersView.as_view()),
    path("Users/.search", scim.UsersSearchView.as_view()),
    path("Users/<str:scim_id>", scim.UserView.as_view()),
    path("Groups", scim.GroupsView.as_view()),
    path("Groups/.search", scim.GroupsSearchView.as_view()),
    path("Groups/<str:scim_id>", scim.GroupView.as_view()),
    path("ServiceProviderConfig", scim.ServiceProviderConfigView.as_view()),
    path("Schemas", scim.SchemasView.as_view()),
    path("Schemas/<str:key>", scim.SchemasView.as_view()),
    path("ResourceTypes", scim.ResourceTypesView.as_view()),
    path("ResourceTypes/<str:key>", scim.ResourceTypesView.as_view()),
    path(".search", scim.RootSearchView.as_view()),
    re_path(r"^.*$", scim.NotFoundView.as_view()),
]
