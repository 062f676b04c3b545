"""Dashboard pages of the staff area; their routes."""

urlpatterns: list = []
