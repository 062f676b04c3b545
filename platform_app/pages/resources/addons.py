"""Dashboard pages of addons (docs/resources.md)."""

urlpatterns: list = []
