"""Routes of components (docs/resources.md)."""

urlpatterns: list = []
