"""Routes of addons (docs/resources.md)."""

urlpatterns: list = []
