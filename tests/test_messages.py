"""Flash messages (config.middleware.LazyMessageMiddleware): opened only by requests that read or add one, so a
message waits through any number of API requests and is shown once by the next page."""
import pytest
from django.test import Client

from platform_app.models import Workspace
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_flash_message_waits_through_api_requests_and_shows_once():
    client = Client()
    client.force_login(UserFactory())
    created = client.post("/dashboard/", {"name": "Acme"})
    assert created.status_code == 302 and Workspace.objects.filter(name="Acme").exists()
    assert "messages" in created.cookies
    for _ in range(3):
        api = client.get("/api/regions")
        assert api.status_code == 200 and "messages" not in api.cookies
    page = client.get(created["Location"]).content.decode()
    assert "Workspace “Acme” created." in page
    assert "Workspace “Acme” created." not in client.get(created["Location"]).content.decode()
