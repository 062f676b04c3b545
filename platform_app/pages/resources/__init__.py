"""Dashboard pages of the project's resources, one module per feature, each with its own `urlpatterns` (included by
platform_app/pages/urls.py) and its tab in templates/platform_app/project_base.html."""
