"""Routes of the teams area (mounted under /v1/)."""
urlpatterns = []
