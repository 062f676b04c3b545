"""Dashboard page parts kept under the workspace's answer stamp (platform_app/api/kept.py, `kept_page_part`): the
projects table and a finished build's log, read once and shown again until a committed change moves the stamp.

These tests commit (`transactional_db`): parts are kept only outside a transaction, where the stamp moves."""
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from platform_app.models import Deployment, LogLine
from platform_app.services.deployments.deployments import log_append
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.pages.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)


def _page(client, path) -> tuple[str, list[str]]:
    """The page's HTML, without its CSRF tokens (masked anew on each page), and the statements that made it."""
    with CaptureQueriesContext(connection) as queries:
        resp = client.get(path)
    assert resp.status_code == 200, resp.content
    html = re.sub(r'("X-CSRFToken": |name="csrfmiddlewaretoken" value=)"[^"]+"', r"\1-", resp.content.decode())
    return html, [q["sql"] for q in queries.captured_queries]


def _read(statements, table) -> bool:
    return any(f'"{table}"' in sql for sql in statements)


def test_the_projects_table_is_kept_until_a_deployment_changes(alice, project):
    owner = sign_in(alice)
    deployment = DeploymentFactory(project=project, status="ready", branch="main")
    first, statements = _page(owner, "/dashboard/acme/")
    assert "badge-ready" in first and _read(statements, "platform_app_deployment")
    again, statements = _page(owner, "/dashboard/acme/")
    assert again == first
    assert not _read(statements, "platform_app_deployment") and not _read(statements, "platform_app_project")

    # no signal, no save(): only the database sees this write, and it moves the stamp
    Deployment.objects.filter(pk=deployment.pk).update(status="error")
    after, statements = _page(owner, "/dashboard/acme/")
    assert "badge-error" in after and "badge-ready" not in after and _read(statements, "platform_app_deployment")

    # another search, another table
    searched, _ = _page(owner, "/dashboard/acme/?q=nothing-like-it")
    assert "No project matches." in searched and "badge-error" not in searched


def test_what_a_role_may_do_is_drawn_around_a_kept_table(alice, viewer_user, workspace):
    """The owner's page kept the (empty) table; the viewer's page still offers no project creation."""
    owner, viewer = sign_in(alice), sign_in(viewer_user)
    assert "Create your first project" in _page(owner, "/dashboard/acme/")[0]
    assert "Create your first project" not in _page(viewer, "/dashboard/acme/")[0]


def test_a_finished_build_log_is_kept_on_its_page_until_it_expires(alice, project):
    owner = sign_in(alice)
    deployment = DeploymentFactory(project=project, status="ready")
    for n in (1, 2, 3):
        log_append(deployment, f"step <{n}>")
    path = f"/dashboard/acme/deployments/{deployment.pk}/"
    first, statements = _page(owner, path)
    assert '<span class="log-line" data-seq="3">step &lt;3&gt;</span>' in first and 'data-last-event-id="3"' in first
    assert _read(statements, "platform_app_logline")
    again, statements = _page(owner, path)
    assert again == first and not _read(statements, "platform_app_logline")

    LogLine.objects.filter(deployment=deployment).delete()
    Deployment.objects.filter(pk=deployment.pk).update(log_expired_at=timezone.now())
    expired, _ = _page(owner, path)
    assert "log-line" not in expired and "This log was deleted on" in expired


def test_a_running_build_log_is_read_anew_each_time(alice, project):
    owner = sign_in(alice)
    deployment = DeploymentFactory(project=project, status="building")
    log_append(deployment, "cloning")
    path = f"/dashboard/acme/deployments/{deployment.pk}/"
    assert 'data-seq="1">cloning' in _page(owner, path)[0]
    log_append(deployment, "installing")
    page, statements = _page(owner, path)
    assert 'data-seq="2">installing' in page and 'data-finished="false"' in page
    assert _read(statements, "platform_app_logline")
