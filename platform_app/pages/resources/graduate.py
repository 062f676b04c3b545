"""Dashboard pages of graduate (docs/resources.md)."""

urlpatterns: list = []
