"""Dashboard pages of databases (docs/resources.md)."""

urlpatterns: list = []
