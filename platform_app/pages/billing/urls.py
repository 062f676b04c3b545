"""Dashboard pages of the billing area; their routes."""

urlpatterns: list = []
