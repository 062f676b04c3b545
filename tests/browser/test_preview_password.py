"""Preview protection in a real browser: a password-protected preview asks for the password on its own host, the
form posts there (/.well-known/svc-preview), a wrong password asks again, the right one sets the cookie on the
preview host and lands on the page asked for; a new password sends the visitor back to the form. The page is
axe-checked and captured in docs/screens/."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot

pytestmark = pytest.mark.slow

SETUP = """
import json
from django.conf import settings
from platform_app.models import Deployment, Project, Workspace
from platform_app.services.edge.preview import protection_set
folder = settings.ARTIFACT_ROOT / "preview-site"
(folder / "docs").mkdir(parents=True, exist_ok=True)
(folder / "index.html").write_text("<!doctype html><html lang=en><title>Draft</title><h1>Draft home</h1></html>")
(folder / "docs" / "index.html").write_text("<!doctype html><html lang=en><title>Docs</title><h1>Draft docs</h1></html>")
workspace = Workspace.objects.create(name="Previews", slug="previews-browser")
project = Project.objects.create(workspace=workspace, name="Draft", slug="draft")
deployment = Deployment.objects.create(project=project, env="preview", branch="draft", status="ready",
                                       artifact_path="preview-site")
protection_set(project=project, mode="password", password="open-sesame-1")
print(json.dumps({"project": project.pk, "label": "draft-" + deployment.pk[4:12]}))
"""

CHANGE = """
import json
from platform_app.models import Project
from platform_app.services.edge.preview import protection_set
protection_set(project=Project.objects.get(slug="draft"), mode="password", password="open-sesame-2")
print(json.dumps(True))
"""


def test_the_password_form_lets_a_visitor_in_on_the_preview_host(live_platform, new_page):
    made = live_platform.script(SETUP)
    origin = f"http://{made['label']}.localhost:{live_platform.port}"
    page = new_page()
    response = page.goto(origin + "/docs/")
    assert response.status == 401
    expect(page.get_by_role("heading", name="Draft: protected preview")).to_be_visible()
    expect(page.get_by_label("Password")).to_be_visible()
    axe_check(page)
    screenshot(page, "preview-password")

    page.locator("input[name=password]").fill("not-the-password")
    page.get_by_role("button", name="View").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong password.")
    assert page.url == origin + "/.well-known/svc-preview"

    page.locator("input[name=password]").fill("open-sesame-1")
    page.get_by_role("button", name="View").click()
    expect(page.get_by_role("heading", name="Draft docs")).to_be_visible()
    assert page.url == origin + "/docs/"  # back to the page asked for
    cookies = {c["name"]: c for c in page.context.cookies(origin)}
    cookie = cookies[f"svc_preview_{made['project']}"]
    assert cookie["domain"] == f"{made['label']}.localhost" and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert page.goto(origin + "/").status == 200
    expect(page.get_by_role("heading", name="Draft home")).to_be_visible()

    live_platform.script(CHANGE)  # a new password: the cookie of the old one no longer lets anyone in
    assert page.goto(origin + "/").status == 401
    page.locator("input[name=password]").fill("open-sesame-2")
    page.get_by_role("button", name="View").click()
    expect(page.get_by_role("heading", name="Draft home")).to_be_visible()
