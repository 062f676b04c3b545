"""Routes of the project's resources: add-ons, components and volumes, buckets, dedicated databases, the tunnel,
graduation. One module per feature, each with its own `urlpatterns` (included by platform_app/api/urls.py)."""
