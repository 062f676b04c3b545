"""Dashboard pages of the org area; their routes."""

urlpatterns: list = []
