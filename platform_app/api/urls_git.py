"""Routes of the git area (mounted under /v1/)."""
urlpatterns = []
