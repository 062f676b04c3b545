"""scim2-tester, an RFC 7643/7644 checker nobody here wrote, against /scim/v2: discovery, then create, read,
replace, patch and delete of Users and Groups with the random resources it makes. The platform's WSGI application
is called in this process (scim2-client's WSGI engine), so the test database is the one it writes."""
import io
import json
import uuid

import pytest

from tests.platform_app.org.conftest import SCIM_TOKEN
from tests.platform_app.org.factories import WorkspaceSsoFactory

pytestmark = pytest.mark.django_db

# What the checker reports that the platform does on purpose (docs/org.md, "Deviations"): a User always has an
# address, so the checker's `add emails` meets the one the User was made with (SCIM adds to a multi-valued
# attribute; the checker expects only its own); and `active` is never unassigned (a User is a member or not).
DEVIATIONS = {("User", "check_add_attribute", "emails"), ("User", "check_remove_attribute", "active")}


def with_emails(app):
    """Gives every User the checker creates or replaces an address when it sends none: a platform account needs
    one (docs/org.md, SCIM's one deviation), and the checker's random Users often have none."""

    def wrapped(environ, start_response):
        if environ["REQUEST_METHOD"] in ("POST", "PUT") and environ["PATH_INFO"].startswith("/scim/v2/Users"):
            body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            if isinstance(body, dict) and not body.get("emails"):
                body["emails"] = [{"value": f"u{uuid.uuid4().hex[:12]}@example.com", "primary": True}]
            raw = json.dumps(body).encode()
            environ = {**environ, "wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw))}
        return app(environ, start_response)

    return wrapped


@pytest.fixture
def connections_kept():
    """As Django's test client does: the request's end does not close the test's database connection."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_scim2_tester_finds_nothing_wrong(workspace, alice, settings, connections_kept):
    from django.core.wsgi import get_wsgi_application
    from scim2_client.engines.wsgi import WSGISCIMClient
    from scim2_tester import Status, check_server

    settings.ALLOWED_HOSTS = ["testserver"]
    WorkspaceSsoFactory(workspace=workspace, enabled=False, issuer="", scim_raw=SCIM_TOKEN, allowed_domains=[])
    client = WSGISCIMClient(with_emails(get_wsgi_application()), base_url="http://testserver/scim/v2",
                            headers={"Authorization": f"Bearer {SCIM_TOKEN}"})
    results = check_server(client)
    report = "\n".join(f"{r.status.name} {r.resource_type} {r.title}: {(r.reason or '')[:300]}" for r in results)
    failed = {(r.resource_type, r.title, (r.data or {}).get("urn")) for r in results if r.status == Status.ERROR}
    assert len(results) > 50 and sum(r.status == Status.SUCCESS for r in results) > 50, report
    print(report)
    assert failed == DEVIATIONS, report
