"""Dashboard pages of the mcp area; their routes."""

urlpatterns: list = []
