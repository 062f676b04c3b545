"""Routes of tunnel (docs/resources.md)."""

urlpatterns: list = []
