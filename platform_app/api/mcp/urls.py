"""Routes of the mcp area (mounted under /v1/), one module per feature listed here."""

urlpatterns: list = []
