"""Warehouse routes under /api/."""
urlpatterns = []
