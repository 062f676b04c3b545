"""Routes of graduate (docs/resources.md)."""

urlpatterns: list = []
