"""Routes of the env area (mounted under /v1/)."""
urlpatterns = []
