"""The MCP endpoint and its authorization server (mounted under /v1/); the two metadata documents are at the
site's root (`/.well-known/...`, config/urls.py)."""
from django.urls import path

from platform_app.api.mcp import mcp

urlpatterns = [
    path("mcp", mcp.McpView.as_view()),
    path("mcp/authorize", mcp.AuthorizeView.as_view(), name="mcp-authorize"),
    path("mcp/token", mcp.TokenView.as_view()),
    path("mcp/register", mcp.RegisterView.as_view()),
]
