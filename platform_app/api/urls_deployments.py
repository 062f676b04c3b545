"""Routes of the deployments area (mounted under /v1/)."""
urlpatterns = []
