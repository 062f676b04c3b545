"""Dashboard pages of the staff area; their routes: the public status page and the staff incident pages."""
from django.urls import path

from platform_app.pages.staff import views

urlpatterns = [
    path("status", views.status_page, name="status"),
    path("staff/incidents/", views.incidents_page, name="staff-incidents"),
    path("staff/incidents/<str:incident_id>/", views.incident_page, name="staff-incident"),
]
