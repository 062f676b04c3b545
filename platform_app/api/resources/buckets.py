"""Routes of buckets (docs/resources.md)."""

urlpatterns: list = []
