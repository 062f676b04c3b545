"""Warehouse directory routes (mounted under /api/)."""
urlpatterns = []
