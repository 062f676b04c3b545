"""Routes of databases (docs/resources.md)."""

urlpatterns: list = []
