"""Dashboard pages of buckets (docs/resources.md)."""

urlpatterns: list = []
