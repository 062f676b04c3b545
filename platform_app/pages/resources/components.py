"""Dashboard pages of components (docs/resources.md)."""

urlpatterns: list = []
