"""Dashboard pages and their parts kept under the workspace's answer stamp: the projects table and a finished
build's log (platform_app/api/kept.py, `kept_page_part`), and whole pages per member with their own CSRF token,
switcher and messages (platform_app/pages/kept.py), read once and shown again until a committed change moves the stamp.

These tests commit (`transactional_db`): pages are kept only outside a transaction, where the stamp moves."""
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from platform_app.models import Deployment, LogLine
from platform_app.services.deployments.deployments import log_append
from tests.factories import MembershipFactory, WorkspaceFactory
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


def _token(html: str) -> str:
    return re.search(r'"X-CSRFToken": "([^"]+)"', html).group(1)


def test_a_page_is_kept_whole_with_the_members_own_token_switcher_and_messages(alice, project):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    DeploymentFactory(project=project, status="ready")
    first = browser.get("/dashboard/acme/")
    assert first.templates, "the first request renders the page"
    kept = browser.get("/dashboard/acme/")
    assert kept.status_code == 200 and not kept.templates  # nothing rendered: the kept page, filled in
    assert kept.content.replace(_token(kept.content.decode()).encode(), b"-") == \
        first.content.replace(_token(first.content.decode()).encode(), b"-")

    # the member's workspaces, read for each request: one joined since the page was kept is offered
    MembershipFactory(workspace=WorkspaceFactory(slug="side", name="Side job"), user=alice, role="viewer")
    switched = browser.get("/dashboard/acme/")
    html = switched.content.decode()
    assert not switched.templates
    assert '<option value="acme" selected>Acme</option>' in html and '<option value="side">Side job</option>' in html

    # the kept page's token is this session's: a form posted with it passes the CSRF check
    renamed = browser.post("/dashboard/acme/settings/", {"action": "rename", "name": "Acme & Co", "slug": "acme"},
                           HTTP_X_CSRFTOKEN=_token(html))
    assert renamed.status_code == 302
    # a message waiting: the page is rendered, with it (and the new name: the name is in the key)
    shown = browser.get("/dashboard/acme/")
    assert shown.templates and "Workspace saved." in shown.content.decode()
    assert "<h1>Acme &amp; Co</h1>" in shown.content.decode()
    again = browser.get("/dashboard/acme/")  # the message shown once; the page rendered without it is kept
    assert "Workspace saved." not in again.content.decode() and "<h1>Acme &amp; Co</h1>" in again.content.decode()
    assert not browser.get("/dashboard/acme/").templates


def test_a_kept_page_is_the_members_own(alice, bob, project):
    """Two members of the workspace each get their own page (their address in the header, their role's buttons)."""
    owner, developer = sign_in(alice), sign_in(bob)
    for _ in range(2):
        mine, theirs = _page(owner, "/dashboard/acme/")[0], _page(developer, "/dashboard/acme/")[0]
    assert "alice@example.com" in mine and "bob@example.com" not in mine and "New project" in mine
    assert "bob@example.com" in theirs and "alice@example.com" not in theirs and "New project" not in theirs


def test_a_failed_build_page_is_rendered_each_time(alice, project):
    """What the doctor found is not in the stamp: a failed build's page is not kept; a ready one's is."""
    owner = sign_in(alice)
    failed = DeploymentFactory(project=project, status="error", error_message="npm ERR! missing script: build")
    ready = DeploymentFactory(project=project, status="ready")
    for deployment, kept in ((failed, False), (ready, True)):
        path = f"/dashboard/acme/deployments/{deployment.pk}/"
        assert owner.get(path).templates
        assert bool(owner.get(path).templates) is not kept


def test_text_shaped_like_a_slot_is_shown_as_text(alice, workspace):
    """Only the template's own slots are filled: a project named like one shows its name on the kept page."""
    from tests.platform_app.projects.factories import ProjectFactory

    ProjectFactory(workspace=workspace, slug="odd", name="<kept-page-slot-switcher> <kept-page-slot-csrf>")
    owner = sign_in(alice)
    for _ in range(2):
        html = owner.get("/dashboard/acme/").content.decode()
        assert "&lt;kept-page-slot-switcher&gt; &lt;kept-page-slot-csrf&gt;" in html
        assert html.count('<option value="acme" selected>Acme</option>') == 1
