"""Warehouse commerce routes (mounted under /api/)."""
urlpatterns = []
