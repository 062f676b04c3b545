"""Dashboard pages of tunnel (docs/resources.md)."""

urlpatterns: list = []
